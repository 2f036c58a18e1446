package io.retrysafe.quarkus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.quarkus.runtime.configuration.DurationConverter;
import io.retrysafe.OperationPolicy;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfig;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The documented {@code retrysafe.*} keys, read by SmallRye Config as Quarkus reads them, and what they build. */
class SettingsTest {

    private static RetrySafeConfig config(Map<String, String> properties) {
        // Quarkus's own syntax of durations ("30s", "24h"), as an application reads them.
        SmallRyeConfig config = new SmallRyeConfigBuilder().withMapping(RetrySafeConfig.class)
                .withConverter(Duration.class, 100, new DurationConverter())
                .withSources(new PropertiesConfigSource(properties, "test", 100)).build();
        return config.getConfigMapping(RetrySafeConfig.class);
    }

    @Test
    void everyDocumentedKeyIsRead() {
        RetrySafeConfig config = config(Map.ofEntries(Map.entry("retrysafe.enabled", "false"),
                Map.entry("retrysafe.name", "payments"), Map.entry("retrysafe.mode", "standalone"),
                Map.entry("retrysafe.datasource", "records"), Map.entry("retrysafe.store.table", "app.records"),
                Map.entry("retrysafe.store.initialize-schema", "true"), Map.entry("retrysafe.store.lock-timeout", "2s"),
                Map.entry("retrysafe.policy.retention", "48h"), Map.entry("retrysafe.policy.lease-ttl", "10s"),
                Map.entry("retrysafe.policy.wait-for-result", "3s"), Map.entry("retrysafe.policy.retry-after", "2s"),
                Map.entry("retrysafe.key.min-length", "16"), Map.entry("retrysafe.key.max-length", "64"),
                Map.entry("retrysafe.http.scope", "hashed-header"), Map.entry("retrysafe.http.scope-header", "X-Api-Key"),
                Map.entry("retrysafe.http.routes.payments.method", "PUT"),
                Map.entry("retrysafe.http.routes.payments.pattern", "/payments/{id}"),
                Map.entry("retrysafe.http.routes.payments.key-required", "false"),
                Map.entry("retrysafe.http.routes.payments.retention", "1h"),
                Map.entry("retrysafe.http.routes.payments.json-members", "/account,/amount"),
                Map.entry("retrysafe.http.routes.payments.fingerprint-headers", "X-Tenant"),
                Map.entry("retrysafe.http.max-request-bytes", "4096"),
                Map.entry("retrysafe.http.max-response-bytes", "8192"),
                Map.entry("retrysafe.http.replayed-headers", "Location,Content-Type")));

        assertThat(config.enabled()).isFalse();
        assertThat(config.name()).isEqualTo("payments");
        assertThat(config.mode()).isEqualTo(RetrySafeConfig.Mode.STANDALONE);
        assertThat(config.datasource()).hasValue("records");
        assertThat(config.store().table()).isEqualTo("app.records");
        assertThat(config.store().initializeSchema()).isTrue();
        assertThat(config.store().lockTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(config.policy().retention()).isEqualTo(Duration.ofHours(48));
        assertThat(config.policy().leaseTtl()).isEqualTo(Duration.ofSeconds(10));
        assertThat(config.policy().waitForResult()).isEqualTo(Duration.ofSeconds(3));
        assertThat(config.policy().retryAfter()).isEqualTo(Duration.ofSeconds(2));
        assertThat(config.key().minLength()).isEqualTo(16);
        assertThat(config.key().maxLength()).isEqualTo(64);
        assertThat(config.http().scope()).isEqualTo(RetrySafeConfig.Scope.HASHED_HEADER);
        assertThat(config.http().scopeHeader()).hasValue("X-Api-Key");
        RetrySafeConfig.Route route = config.http().routes().get("payments");
        assertThat(route.method()).isEqualTo("PUT");
        assertThat(route.pattern()).isEqualTo("/payments/{id}");
        assertThat(route.keyRequired()).isFalse();
        assertThat(route.retention()).hasValue(Duration.ofHours(1));
        assertThat(route.jsonMembers()).hasValue(List.of("/account", "/amount"));
        assertThat(route.fingerprintHeaders()).hasValue(List.of("X-Tenant"));
        assertThat(config.http().maxRequestBytes()).isEqualTo(4096);
        assertThat(config.http().maxResponseBytes()).isEqualTo(8192);
        assertThat(config.http().replayedHeaders()).hasValue(Set.of("Location", "Content-Type"));
        assertThat(Settings.jaxrs(config, Settings.policy(config.policy()))).isNotNull();
    }

    @Test
    void theDefaultsAreTheLibrarys() {
        RetrySafeConfig config = config(Map.of());

        assertThat(config.enabled()).isTrue();
        assertThat(config.mode()).isEqualTo(RetrySafeConfig.Mode.TRANSACTIONAL);
        assertThat(config.datasource()).isEqualTo(Optional.empty());
        assertThat(config.store().table()).isEqualTo(io.retrysafe.jdbc.JdbcIdempotencyStore.DEFAULT_TABLE);
        assertThat(config.store().lockTimeout()).isEqualTo(io.retrysafe.jdbc.JdbcIdempotencyStore.DEFAULT_LOCK_TIMEOUT);
        assertThat(Settings.policy(config.policy())).usingRecursiveComparison().isEqualTo(OperationPolicy.ofDefaults());
        assertThat(config.key().maxLength()).isEqualTo(io.retrysafe.KeyRules.DEFAULT_MAX_LENGTH);
        assertThat(config.http().scope()).isEqualTo(RetrySafeConfig.Scope.PRINCIPAL);
        assertThat(config.http().maxRequestBytes()).isEqualTo(io.retrysafe.http.HttpSettings.DEFAULT_MAX_REQUEST_BYTES);
        assertThat(config.http().maxResponseBytes()).isEqualTo(io.retrysafe.http.HttpSettings.DEFAULT_MAX_RESPONSE_BYTES);
        assertThat(config.http().routes()).isEmpty();
    }

    @Test
    void aHeaderScopeWithoutItsHeaderIsRefusedWithTheKeyToSet() {
        RetrySafeConfig config = config(Map.of("retrysafe.http.scope", "header"));

        assertThatThrownBy(() -> Settings.jaxrs(config, OperationPolicy.ofDefaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retrysafe.http.scope=header needs retrysafe.http.scope-header, but it was not set");
    }
}
