package io.retrysafe.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
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

    @ParameterizedTest
    @CsvSource(textBlock = """
            /payments,        /payments
            /payments/,       /payments/
            /p%61yments,      /payments
            /payments;x,      /payments
            //payments,       /payments
            /./payments/.,    /payments/
            /x/../payments,   /payments
            /caf%C3%A9,       /café
            /...,             /...
            /.a/a.,           /.a/a.
            '',               /
            """)
    void aPathIsMatchedAsTheServerDispatchesIt(String raw, String normal) {
        assertThat(HttpPaths.normalise(raw)).isEqualTo(normal);
    }

    @Test
    void aPathAlreadyNormalIsTheWholeWalksAnswerWithoutACopy() {
        // Every path of up to 6 characters over those that steer the walk: the shortcut never answers otherwise.
        for (String raw : words("/.;%2ea", 6)) {
            String normal = HttpPaths.rebuild(raw);
            assertThat(HttpPaths.normalise(raw)).as(raw).isEqualTo(normal);
            if (HttpPaths.isNormal(raw)) {
                assertThat(normal).as(raw).isEqualTo(raw);
            }
        }
        String plain = "/payments/p-1/refunds";
        assertThat(HttpPaths.normalise(plain)).isSameAs(plain);
    }

    @Test
    void aRouteMatchesAndSpellsExactlyAsASegmentBySegmentReadingSays() {
        List<String> patterns = List.of("/", "/a", "/ab", "/a/{id}", "/a/{id}/b", "/{x}", "/{x}/{y}", "/a/**", "/**",
                "/a/{id}/**");
        // Every path of up to 7 characters over '/', a letter in both cases and another letter.
        for (String path : words("/aAb", 7)) {
            for (String pattern : patterns) {
                HttpRoute route = HttpRoute.of("POST", pattern).build();
                for (String method : new String[] {"POST", "post", "GET", null}) {
                    for (boolean ignoreCase : new boolean[] {false, true}) {
                        String expected = spelledBySplitting(pattern, method, path, ignoreCase);
                        assertThat(route.spelling(method, path, ignoreCase))
                                .as(route + " on " + method + " " + path + (ignoreCase ? " in any case" : ""))
                                .isEqualTo(expected);
                        if (!ignoreCase) {
                            assertThat(route.matches(method, path)).as(route + " on " + method + " " + path)
                                    .isEqualTo(expected != null);
                        }
                    }
                }
            }
        }
    }

    /** The route's rule read the plain way, split into segments and compared one by one: the walk's oracle. */
    private static String spelledBySplitting(String pattern, String method, String path, boolean ignoreCase) {
        if (method == null || !(ignoreCase ? method.equalsIgnoreCase("POST") : method.equals("POST"))) {
            return null;
        }
        String[] segments = pattern.equals("/") ? new String[0] : pattern.substring(1).split("/", -1);
        String[] parts = path.split("/", -1);
        StringBuilder spelled = new StringBuilder();
        int p = 1; // parts[0] is what comes before the first '/'
        for (String segment : segments) {
            if (segment.equals("**")) {
                for (; p < parts.length; p++) {
                    spelled.append('/').append(parts[p]);
                }
                return spelled.length() == 0 ? "/" : spelled.toString();
            }
            if (p >= parts.length || parts[p].isEmpty()) {
                return null;
            }
            boolean literal = !segment.startsWith("{");
            if (literal && !(ignoreCase ? segment.equalsIgnoreCase(parts[p]) : segment.equals(parts[p]))) {
                return null;
            }
            spelled.append('/').append(literal ? segment : parts[p]);
            p++;
        }
        boolean ends = p == parts.length || (p == parts.length - 1 && parts[p].isEmpty());
        return !ends ? null : spelled.length() == 0 ? "/" : spelled.toString();
    }

    /** Every string of at most {@code max} characters from {@code alphabet}, the empty one included. */
    private static List<String> words(String alphabet, int max) {
        List<String> all = new ArrayList<>(List.of(""));
        for (int from = 0, length = 1; length <= max; length++) {
            int to = all.size();
            for (int i = from; i < to; i++) {
                for (char c : alphabet.toCharArray()) {
                    all.add(all.get(i) + c);
                }
            }
            from = to;
        }
        return all;
    }
}
