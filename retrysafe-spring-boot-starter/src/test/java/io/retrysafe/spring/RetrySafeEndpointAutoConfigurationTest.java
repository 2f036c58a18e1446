package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.testservices.TestDatabases;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * The {@code idempotency} actuator endpoint: when it exists, and what it tells a client about each
 * protected route (retention, in-flight bounds, keys, fingerprint), in both modes, as JSON.
 */
class RetrySafeEndpointAutoConfigurationTest {

    private static final String EXPOSED = "management.endpoints.web.exposure.include=health," + IdempotencyEndpoint.ID;

    private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, EndpointAutoConfiguration.class,
                    RetrySafeAutoConfiguration.class, RetrySafeWebAutoConfiguration.class,
                    RetrySafeEndpointAutoConfiguration.class))
            .withPropertyValues("retrysafe.http.scope=global");

    private static Map<String, Object> json(IdempotencyEndpoint endpoint) {
        return BootLine.json(endpoint.idempotency());
    }

    @Test
    void exposedItListsEveryRouteWithItsRetentionInFlightBoundsAndFingerprint() {
        runner.withPropertyValues(EXPOSED, "retrysafe.policy.retention=24h", "retrysafe.policy.lease-ttl=20s",
                "retrysafe.policy.wait-for-result=2s", "retrysafe.policy.retry-after=3s",
                "retrysafe.key.min-length=16", "retrysafe.key.max-length=64", "retrysafe.http.max-request-bytes=2048",
                "retrysafe.http.routes[0].method=post", "retrysafe.http.routes[0].pattern=/payments",
                "retrysafe.http.routes[0].json-members=/amount,/account",
                "retrysafe.http.routes[1].method=PATCH", "retrysafe.http.routes[1].pattern=/orders/{id}",
                "retrysafe.http.routes[1].key-required=false", "retrysafe.http.routes[1].retention=90m")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Map<String, Object> json = json(context.getBean(IdempotencyEndpoint.class));

                    assertThat(json).containsEntry("mode", "standalone");
                    assertThat(json.get("key")).isEqualTo(Map.of("header", "Idempotency-Key", "minLength", 16,
                            "maxLength", 64, "maxRequestBytes", 2048));
                    Map<String, Object> inFlight = Map.of("lease", "PT20S", "duplicateWait", "PT2S",
                            "retryAfter", "PT3S");
                    assertThat(json.get("defaults")).isEqualTo(Map.of("retention", "PT24H", "inFlight", inFlight));
                    assertThat(json.get("routes")).isEqualTo(List.of(
                            Map.of("method", "POST", "pattern", "/payments", "keyRequired", true, "retention", "PT24H",
                                    "inFlight", inFlight, "fingerprint",
                                    Map.of("body", "json-members", "members", List.of("/amount", "/account"))),
                            Map.of("method", "PATCH", "pattern", "/orders/{id}", "keyRequired", false,
                                    "retention", "PT1H30M", "inFlight", inFlight, "fingerprint",
                                    Map.of("body", "body", "members", List.of()))));
                });
    }

    @Test
    void withoutRoutesItListsTheFiltersDefaultRoutes() {
        runner.withPropertyValues(EXPOSED).run(context -> {
            Map<String, Object> json = json(context.getBean(IdempotencyEndpoint.class));

            assertThat(json.get("routes")).asList().extracting(r -> ((Map<?, ?>) r).get("method") + " "
                    + ((Map<?, ?>) r).get("pattern") + " keyRequired=" + ((Map<?, ?>) r).get("keyRequired")
                    + " retention=" + ((Map<?, ?>) r).get("retention"))
                    .containsExactly("POST /** keyRequired=false retention=PT24H",
                            "PATCH /** keyRequired=false retention=PT24H");
        });
    }

    @Test
    void inTransactionalModeTheDuplicateWaitIsTheLockTimeoutAndThereIsNoLease() {
        runner.withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE,
                        BootLine.DATA_SOURCE_TRANSACTION_MANAGER))
                .withPropertyValues(EXPOSED, "spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                        "spring.datasource.username=" + TestDatabases.postgresUser(),
                        "spring.datasource.password=" + TestDatabases.postgresPassword(),
                        "retrysafe.store.lock-timeout=7s", "retrysafe.policy.lease-ttl=20s",
                        "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/payments")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Map<String, Object> json = json(context.getBean(IdempotencyEndpoint.class));

                    assertThat(json).containsEntry("mode", "transactional");
                    assertThat(((Map<?, ?>) ((List<?>) json.get("routes")).get(0)).get("inFlight"))
                            .isEqualTo(Map.of("duplicateWait", "PT7S", "retryAfter", "PT1S"));
                });
    }

    /** A route that an asynchronous Spring MVC handler serves runs standalone: its lease and wait, not the lock's. */
    @Test
    void inTransactionalModeARouteRunInStandaloneModeShowsItsModeAndLease() {
        runner.withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE,
                        BootLine.DATA_SOURCE_TRANSACTION_MANAGER))
                .withUserConfiguration(AsyncHandlerRoutesIT.Mvc.class)
                .withPropertyValues(EXPOSED, "spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                        "spring.datasource.username=" + TestDatabases.postgresUser(),
                        "spring.datasource.password=" + TestDatabases.postgresPassword(),
                        "retrysafe.store.lock-timeout=7s", "retrysafe.policy.lease-ttl=20s",
                        "retrysafe.policy.wait-for-result=2s",
                        "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/orders",
                        "retrysafe.http.routes[1].method=POST", "retrysafe.http.routes[1].pattern=/orders/{id}")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Map<String, Object> json = json(context.getBean(IdempotencyEndpoint.class));

                    assertThat(json).containsEntry("mode", "transactional");
                    @SuppressWarnings("unchecked")
                    List<Map<String, Object>> routes = (List<Map<String, Object>>) json.get("routes");
                    assertThat(routes.get(0)).doesNotContainKey("mode").containsEntry("inFlight",
                            Map.of("duplicateWait", "PT7S", "retryAfter", "PT1S"));
                    assertThat(routes.get(1)).containsEntry("mode", "standalone").containsEntry("inFlight",
                            Map.of("lease", "PT20S", "duplicateWait", "PT2S", "retryAfter", "PT1S"));
                });
    }

    @Test
    void withTheFilterOffItShowsTheDefaultsOfIdempotentMethodsAndNoRoute() {
        runner.withPropertyValues(EXPOSED, "retrysafe.http.enabled=false", "retrysafe.policy.retention=2h")
                .run(context -> {
                    Map<String, Object> json = json(context.getBean(IdempotencyEndpoint.class));

                    assertThat(json.get("routes")).isEqualTo(List.of());
                    assertThat(((Map<?, ?>) json.get("defaults")).get("retention")).isEqualTo("PT2H");
                    assertThat(((Map<?, ?>) json.get("key")).containsKey("maxRequestBytes")).isFalse();
                });
    }

    @Test
    void itIsOnlyThereWhenExposedLikeEveryActuatorEndpoint() {
        // Spring Boot exposes only health over HTTP by default: the application opts in.
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(IdempotencyEndpoint.class);
        });
        // NONE: a runner's environment has no lenient conversion (an application's accepts "none").
        runner.withPropertyValues(EXPOSED, "management.endpoint.idempotency.access=NONE").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(IdempotencyEndpoint.class);
        });
    }

    @Test
    void disabledRetrySafeHasNoEndpoint() {
        runner.withPropertyValues(EXPOSED, "retrysafe.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(IdempotencyEndpoint.class);
        });
    }

    @Test
    void itShowsNoScopeStoreOrTable() {
        runner.withPropertyValues(EXPOSED, "retrysafe.http.scope=header", "retrysafe.http.scope-header=X-Tenant-Secret",
                "retrysafe.store.table=secret_table", "retrysafe.name=secret-name",
                "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/payments")
                .run(context -> {
                    String text = BootLine.jsonText(context.getBean(IdempotencyEndpoint.class).idempotency());

                    assertThat(text).contains("/payments").doesNotContainIgnoringCase("secret")
                            .doesNotContainIgnoringCase("tenant").doesNotContain("memory");
                });
    }
}
