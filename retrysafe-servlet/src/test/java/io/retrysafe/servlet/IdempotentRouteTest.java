package io.retrysafe.servlet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.OperationPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IdempotentRouteTest {

    @ParameterizedTest(name = "{0} {1} on {2} → {3}")
    @CsvSource({
            "POST, /payments,              /payments,              true",
            "POST, /payments,              /payments/,             true",
            "POST, /payments,              /payments/1,            false",
            "POST, /payments,              /paymentsx,             false",
            "POST, /payments,              /payment,               false",
            "POST, /payments,              /,                      false",
            "POST, /payments,              /api/payments,          false",
            "POST, /orders/{id}/refunds,   /orders/42/refunds,     true",
            "POST, /orders/{id}/refunds,   /orders/a-b.c/refunds/, true",
            "POST, /orders/{id}/refunds,   /orders//refunds,       false",
            "POST, /orders/{id}/refunds,   /orders/42,             false",
            "POST, /orders/{id}/refunds,   /orders/42/refunds/7,   false",
            "POST, /orders/{id}/refunds,   /orders/42/returns,     false",
            "POST, /api/**,                /api/payments,          true",
            "POST, /api/**,                /api/payments/1/x,      true",
            "POST, /api/**,                /api,                   true",
            "POST, /api/**,                /apix/payments,         false",
            "POST, /**,                    /,                      true",
            "POST, /**,                    /anything/at/all,       true",
            "POST, /,                      /,                      true",
            "POST, /,                      /payments,              false",
    })
    void matchesPathsSegmentBySegment(String method, String pattern, String path, boolean matches) {
        assertThat(IdempotentRoute.of(method, pattern).build().matches("POST", path)).isEqualTo(matches);
    }

    @Test
    void matchesOnlyItsOwnMethodWhichIsNormalisedToUpperCase() {
        IdempotentRoute route = IdempotentRoute.of("post", "/payments").build();

        assertThat(route.method()).isEqualTo("POST");
        assertThat(route.matches("POST", "/payments")).isTrue();
        assertThat(route.matches("PUT", "/payments")).isFalse();
        assertThat(route.matches("GET", "/payments")).isFalse();
        assertThat(route).hasToString("POST /payments");
    }

    @Test
    void theFirstConfiguredRouteThatMatchesApplies() {
        IdempotentRoute specific = IdempotentRoute.of("POST", "/payments/{id}/refunds").keyRequired(false).build();
        IdempotentRoute catchAll = IdempotentRoute.of("POST", "/payments/**").build();
        HttpIdempotency config = HttpIdempotency.custom().route(specific).route(catchAll)
                .scope(ScopeResolver.global("test")).build();

        assertThat(config.route("POST", "/payments/7/refunds")).isSameAs(specific);
        assertThat(config.route("POST", "/payments/7")).isSameAs(catchAll);
        assertThat(config.route("GET", "/payments/7")).isNull();
    }

    @Test
    void defaultsRequireAKeyAndUseTheEnginesPolicyAndTheWholeBody() {
        IdempotentRoute route = IdempotentRoute.of("POST", "/payments").build();

        assertThat(route.keyRequired()).isTrue();
        assertThat(route.policy()).isEmpty();
        assertThat(route.jsonMembers()).isEmpty();
    }

    @Test
    void keepsWhatItIsGiven() {
        OperationPolicy policy = OperationPolicy.custom().retention(Duration.ofDays(7)).build();
        IdempotentRoute route = IdempotentRoute.of("PATCH", "/accounts/{id}").keyRequired(false).policy(policy)
                .jsonMembers("/amount", "/account").build();

        assertThat(route.keyRequired()).isFalse();
        assertThat(route.policy()).containsSame(policy);
        assertThat(route.jsonMembers()).containsExactly("/amount", "/account");
    }

    @ParameterizedTest
    @ValueSource(strings = {"payments", "", "/a//b", "/a/", "/a/{}", "/a/{id", "/a/{id}x", "/a/b?c=1", "/a/b#f",
            "/a b", "/**/payments", "/a/**/b", "/a/**x"})
    void refusesAPatternItCannotMatchAsWritten(String pattern) {
        assertThatThrownBy(() -> IdempotentRoute.of("POST", pattern))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pattern")
                .hasMessageContaining("but was \"" + pattern + "\"");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "PO ST", "POST1", "GET/", "PÖST"})
    void refusesAMethodThatIsNotAnHttpMethodName(String method) {
        assertThatThrownBy(() -> IdempotentRoute.of(method, "/payments"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("method must be an HTTP method name, but was \"" + method + "\"");
    }

    @Test
    void refusesNulls() {
        assertThatThrownBy(() -> IdempotentRoute.of(null, "/payments")).isInstanceOf(NullPointerException.class)
                .hasMessage("method must not be null");
        assertThatThrownBy(() -> IdempotentRoute.of("POST", null)).isInstanceOf(NullPointerException.class)
                .hasMessage("pattern must not be null");
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").policy(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("policy must not be null");
    }

    @Test
    void refusesAValueSetTwice() {
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").keyRequired(true).keyRequired(false))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("keyRequired was already set");
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").policy(OperationPolicy.ofDefaults())
                .policy(OperationPolicy.ofDefaults()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("policy was already set");
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").jsonMembers("/a").jsonMembers("/b"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("jsonMembers was already set");
    }

    @ParameterizedTest
    @ValueSource(strings = {"amount", "#/amount", " /amount"})
    void refusesAJsonMemberThatIsNotAJsonPointer(String pointer) {
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").jsonMembers("/currency", pointer))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was " + pointer);
    }

    @Test
    void fingerprintHeadersAreTokensKeptLowerCaseAndSorted() {
        assertThat(IdempotentRoute.of("POST", "/p").fingerprintHeaders("X-Currency", "X-Account").build()
                .fingerprintHeaders()).containsExactly("x-account", "x-currency");
        assertThatThrownBy(() -> IdempotentRoute.of("POST", "/p").fingerprintHeaders("X Account"))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("a header name is a token, but was X Account");
    }
}
