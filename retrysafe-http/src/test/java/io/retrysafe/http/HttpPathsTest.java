package io.retrysafe.http;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class HttpPathsTest {

    @ParameterizedTest
    @ValueSource(strings = {"/", "/payments", "/payments/", "/payments/p-1/refunds", "/files/a%20b", "/caf%C3%A9",
            "/a%2Bb", "/100%25", "/a%3Bb"})
    void aPathEveryServerReadsAlikeIsCanonical(String raw) {
        assertThat(HttpPaths.isCanonical(raw)).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "payments", "/payments;x", "/payments;jsessionid=1/x", "//payments", "/a//b",
            "/./payments", "/x/../payments", "/payments/.", "/payments/..", "/p%61yments", "/%2e%2e/payments",
            "/payments%2Fx", "/payments%2fx", "/payments%5Cx", "/payments\\x", "/a%00", "/a%zz", "/a%2"})
    void aPathServersMayReadAsAnotherIsNot(String raw) {
        assertThat(HttpPaths.isCanonical(raw)).isFalse();
    }

    @ParameterizedTest(name = "{0} {1} -> {3}")
    @CsvSource(nullValues = "none", textBlock = """
            POST, /payments,             false, /payments
            POST, /payments/,            false, /payments
            POST, /PAYMENTS,             false, none
            POST, /PAYMENTS,             true,  /payments
            post, /Payments/,            true,  /payments
            post, /payments,             false, none
            GET,  /payments,             true,  none
            POST, /payments/P-1/REFUNDS, true,  /payments/P-1/refunds
            POST, /payments/P-1,         true,  none
            """)
    void aRouteSpellsThePathItMatches(String method, String path, boolean ignoreCase, String spelled) {
        HttpRoute payments = HttpRoute.of("POST", "/payments").build();
        HttpRoute refunds = HttpRoute.of("POST", "/payments/{id}/refunds").build();

        String got = payments.spelling(method, path, ignoreCase);
        if (got == null) {
            got = refunds.spelling(method, path, ignoreCase);
        }
        assertThat(got).isEqualTo(spelled);
    }

    @ParameterizedTest
    @CsvSource(textBlock = """
            /files/a/b/,  /files/a/b/
            /FILES/a,     /files/a
            """)
    void aFinalDoubleStarKeepsTheRestAsSent(String path, String spelled) {
        assertThat(HttpRoute.of("GET", "/files/**").build().spelling("GET", path, true)).isEqualTo(spelled);
    }
}
