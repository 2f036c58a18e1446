package io.retrysafe.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.KeyRules;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The settings both filters are built from, through a stack's builder as each filter's module writes one. */
class HttpSettingsTest {

    /** A stack's builder: its own scope type and build method, everything else inherited. */
    static final class StackBuilder extends HttpSettings.Builder<String, StackBuilder> {
        StackBuilder() {
            super("StackScope");
        }

        HttpSettings<String> build() {
            return settings();
        }
    }

    @Test
    void withoutSettingsTheDefaultsApply() {
        HttpSettings<String> settings = new StackBuilder().scope("caller").build();

        assertThat(settings.scope()).isEqualTo("caller");
        assertThat(settings.routes()).isEqualTo(HttpSettings.DEFAULT_ROUTES);
        assertThat(settings.route("POST", "/anything")).isNotNull().satisfies(r -> assertThat(r.keyRequired()).isFalse());
        assertThat(settings.route("GET", "/anything")).isNull();
        assertThat(settings.keyRules()).isSameAs(KeyRules.DEFAULT);
        assertThat(settings.maxRequestBytes()).isEqualTo(HttpSettings.DEFAULT_MAX_REQUEST_BYTES);
        assertThat(settings.maxResponseBytes()).isEqualTo(HttpSettings.DEFAULT_MAX_RESPONSE_BYTES);
        assertThat(settings.replayedHeaders()).isEqualTo(HttpSemantics.DEFAULT_REPLAYED_HEADERS);
    }

    @Test
    void theFirstMatchingRouteApplies() {
        HttpRoute payments = HttpRoute.of("POST", "/payments").build();
        HttpRoute any = HttpRoute.of("POST", "/**").keyRequired(false).build();
        HttpSettings<String> settings = new StackBuilder().route(payments).route(any).scope("caller")
                .maxRequestBytes(10).maxResponseBytes(20).replayedHeaders(Set.of("Location")).build();

        assertThat(settings.routes()).containsExactly(payments, any);
        assertThat(settings.route("POST", "/payments")).isSameAs(payments);
        assertThat(settings.route("POST", "/refunds")).isSameAs(any);
        assertThat(settings.maxRequestBytes()).isEqualTo(10);
        assertThat(settings.maxResponseBytes()).isEqualTo(20);
        assertThat(settings.replayedHeaders()).containsExactly("location");
    }

    @Test
    void withoutAScopeNothingIsBuiltAndTheMessageNamesTheStacksResolver() {
        assertThatThrownBy(() -> new StackBuilder().build()).isInstanceOf(IllegalStateException.class)
                .hasMessage("choose whose intent a key belongs to: scope(StackScope.principal()), a resolver of "
                        + "your own, or, only for a single trusted caller, StackScope.global(name)");
    }

    @Test
    void aValueSetTwiceOrOutOfRangeOrACredentialHeaderIsRefused() {
        assertThatThrownBy(() -> new StackBuilder().scope("a").scope("b")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new StackBuilder().maxRequestBytes(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new StackBuilder().maxResponseBytes(1).maxResponseBytes(2))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new StackBuilder().replayedHeaders(Set.of("Set-Cookie")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Set-Cookie");
    }
}
