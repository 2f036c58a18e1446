package io.retrysafe;

import static io.retrysafe.Generated.anyString;
import static io.retrysafe.Generated.forAll;
import static io.retrysafe.Generated.length;
import static io.retrysafe.Generated.oneOf;
import static io.retrysafe.Generated.printableAscii;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.retrysafe.InvalidKeyException.Rule;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link KeyRules#parseHeader} on generated {@code Idempotency-Key} field values: whatever a client
 * sends, the answer is the key or an {@link InvalidKeyException} naming the rule broken, and every
 * key accepted comes back unchanged from its RFC 8941 sf-string spelling.
 */
class KeyRulesPropertyTest {
    private static final int TRIES = 2_000;

    /** Rules with random limits, the default among them, so that lengths around every limit are hit. */
    private static KeyRules rules(SplittableRandom r) {
        if (r.nextBoolean()) {
            return KeyRules.DEFAULT;
        }
        int min = 1 + r.nextInt(KeyRules.MAX_LENGTH);
        int max = min + r.nextInt(KeyRules.MAX_LENGTH - min + 1);
        return KeyRules.custom().minLength(min).maxLength(max).build();
    }

    private record Case(KeyRules rules, String fieldValue) {
    }

    /** A field value of any characters, sometimes quoted, sometimes with OWS, with lengths around the limits. */
    private static String anyFieldValue(SplittableRandom r, KeyRules rules) {
        String s = anyString(r, length(r, 600, 0, 1, rules.minLength(), rules.maxLength(), KeyRules.MAX_LENGTH));
        if (r.nextInt(3) == 0) {
            s = "\"" + s + (r.nextBoolean() ? "\"" : "");
        }
        if (r.nextInt(4) == 0) {
            s = oneOf(r, " ", "\t", " \t") + s + oneOf(r, "", " ", "\t ");
        }
        return s;
    }

    @Test
    void anyFieldValueIsAKeyOrAnInvalidKeyExceptionAndAKeyRoundTrips() {
        forAll(TRIES, r -> {
            KeyRules rules = rules(r);
            return new Case(rules, anyFieldValue(r, rules));
        }, c -> assertKeyOrRefusal(c.rules(), c.fieldValue()));
    }

    /** Tomcat hands header bytes over as ISO-8859-1 characters; any byte may arrive. */
    @Test
    void anyHeaderBytesAreAKeyOrAnInvalidKeyException() {
        forAll(TRIES, r -> {
            byte[] bytes = Generated.bytes(r, length(r, 300, 255, 257));
            return new Case(KeyRules.DEFAULT, new String(bytes, StandardCharsets.ISO_8859_1));
        }, c -> assertKeyOrRefusal(c.rules(), c.fieldValue()));
    }

    @Test
    void everyPrintableKeyRoundTripsQuotedAndIsJudgedOnlyByItsLength() {
        forAll(TRIES, r -> {
            KeyRules rules = rules(r);
            String key = printableAscii(r, length(r, 300, 0, 1, rules.minLength(), rules.maxLength()));
            return new Case(rules, key);
        }, c -> {
            String key = c.fieldValue();
            KeyRules rules = c.rules();
            String quoted = sfString(key);
            if (key.isEmpty()) {
                assertRefused(rules, quoted, Rule.EMPTY);
            } else if (key.length() < rules.minLength()) {
                assertRefused(rules, quoted, Rule.TOO_SHORT);
            } else if (key.length() > rules.maxLength()) {
                assertRefused(rules, quoted, Rule.TOO_LONG);
            } else {
                assertThat(rules.parseHeader(quoted)).isEqualTo(key);
                assertThat(rules.parseHeader(" \t" + quoted + "\t ")).as("with OWS").isEqualTo(key);
                assertThat(rules.parseHeader(List.of(quoted))).as("as the only field line").isEqualTo(key);
                if (bareSafe(key)) {
                    assertThat(rules.parseHeader(key)).as("bare").isEqualTo(key);
                }
            }
        });
    }

    @Test
    void aCharacterOutsidePrintableAsciiIsRefusedAtItsIndexInTheKey() {
        forAll(TRIES, r -> {
            String key = printableAscii(r, length(r, 300, 255));
            int at = r.nextInt(key.length() + 1);
            char bad;
            do {
                bad = Generated.anyChar(r);
            } while (bad >= 0x20 && bad <= 0x7e);
            return key.substring(0, at) + bad + key.substring(at);
        }, key -> {
            int at = firstNonPrintable(key);
            InvalidKeyException e = refusal(KeyRules.DEFAULT, sfString(key));
            assertThat(e.rule()).isEqualTo(Rule.NOT_PRINTABLE_ASCII);
            assertThat(e.getMessage()).endsWith("at index " + at)
                    .contains("0x" + Integer.toHexString(key.charAt(at)));
        });
    }

    @Test
    void aListIsMultipleValuesWhateverFollowsTheComma() {
        forAll(TRIES, r -> {
            String first = printableAscii(r, length(r, 300, 255, 256));
            String rest = anyString(r, length(r, 40));
            if (r.nextBoolean()) {
                return sfString(first) + oneOf(r, "", " ", "\t") + "," + rest;
            }
            return bareOnly(first) + "," + rest;
        }, fieldValue -> assertRefused(KeyRules.DEFAULT, fieldValue, Rule.MULTIPLE_VALUES));
    }

    @Test
    void severalFieldLinesAreMultipleValuesWhateverTheyHold() {
        forAll(TRIES, r -> {
            List<String> lines = new ArrayList<>();
            int n = 2 + r.nextInt(3);
            for (int i = 0; i < n; i++) {
                lines.add(r.nextInt(8) == 0 ? null : anyString(r, length(r, 40)));
            }
            return lines;
        }, lines -> {
            Throwable thrown = catchThrowable(() -> KeyRules.DEFAULT.parseHeader(lines));
            assertThat(thrown).isInstanceOfSatisfying(InvalidKeyException.class,
                    e -> assertThat(e.rule()).isEqualTo(Rule.MULTIPLE_VALUES));
        });
    }

    @Test
    void anEscapeOfAnythingButQuoteOrBackslashIsMalformed() {
        forAll(TRIES, r -> {
            String before = sfEscaped(printableAscii(r, length(r, 40)));
            char escaped;
            do {
                escaped = Generated.anyChar(r);
            } while (escaped == '"' || escaped == '\\');
            return "\"" + before + "\\" + escaped + sfEscaped(printableAscii(r, length(r, 40))) + "\"";
        }, fieldValue -> assertRefused(KeyRules.DEFAULT, fieldValue, Rule.MALFORMED));
    }

    @Test
    void textAfterTheClosingQuoteIsMalformed() {
        forAll(TRIES, r -> {
            char after;
            do {
                after = (char) r.nextInt(0x21, 0x7f);
            } while (after == ',');
            return sfString(printableAscii(r, 1 + r.nextInt(60))) + oneOf(r, "", " ", "\t") + after
                    + printableAscii(r, length(r, 20));
        }, fieldValue -> assertRefused(KeyRules.DEFAULT, fieldValue, Rule.MALFORMED));
    }

    /** Refusals may be logged and returned as they are: they name the rule and position, never the key. */
    @Test
    void aRefusalNeverRepeatsTheKey() {
        forAll(TRIES, r -> {
            String marker = HexFormat.of().formatHex(Generated.bytes(r, 16));
            return anyString(r, length(r, 30)) + marker + anyString(r, length(r, 300, 255)) + "\u0000" + marker;
        }, value -> {
            String marker = value.substring(value.length() - 32);
            for (String fieldValue : List.of(value, sfString(value), value + ",x", "\"" + value)) {
                InvalidKeyException e = refusal(KeyRules.DEFAULT, fieldValue);
                assertThat(e.getMessage()).doesNotContain(marker);
            }
        });
    }

    // ---- helpers

    private static void assertKeyOrRefusal(KeyRules rules, String fieldValue) {
        String key;
        try {
            key = rules.parseHeader(fieldValue);
        } catch (InvalidKeyException e) {
            assertThat(e.rule()).isNotNull();
            assertThat(e.getMessage()).isNotBlank();
            assertThat(e.httpStatus()).isEqualTo(400);
            Throwable again = catchThrowable(() -> rules.parseHeader(List.of(fieldValue)));
            assertThat(again).as("the only field line is judged the same").isInstanceOfSatisfying(
                    InvalidKeyException.class, same -> assertThat(same.rule()).isEqualTo(e.rule()));
            return;
        }
        assertThat(key).hasSizeBetween(rules.minLength(), rules.maxLength());
        assertThat(firstNonPrintable(key)).as("index of a non-printable character").isEqualTo(-1);
        assertThat(rules.validate(key)).isEqualTo(key);
        assertThat(rules.parseHeader(sfString(key))).as("its sf-string spelling").isEqualTo(key);
        assertThat(rules.parseHeader(List.of(fieldValue))).as("as the only field line").isEqualTo(key);
        if (bareSafe(key)) {
            assertThat(rules.parseHeader(key)).as("bare").isEqualTo(key);
        }
    }

    private static void assertRefused(KeyRules rules, String fieldValue, Rule rule) {
        assertThat(refusal(rules, fieldValue).rule()).isEqualTo(rule);
    }

    private static InvalidKeyException refusal(KeyRules rules, String fieldValue) {
        Throwable thrown = catchThrowable(() -> rules.parseHeader(fieldValue));
        assertThat(thrown).isInstanceOf(InvalidKeyException.class);
        return (InvalidKeyException) thrown;
    }

    /** RFC 8941 §4.1.6: a string is DQUOTE, its characters with '"' and '\' escaped, DQUOTE. */
    static String sfString(String s) {
        return "\"" + sfEscaped(s) + "\"";
    }

    private static String sfEscaped(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
    }

    /** What a client may send unquoted: no OWS, quote, backslash or list separator. */
    private static boolean bareSafe(String key) {
        return key.chars().noneMatch(c -> c == ' ' || c == '\t' || c == '"' || c == '\\' || c == ',');
    }

    private static String bareOnly(String s) {
        String bare = s.replaceAll("[ \t\"\\\\,]", "");
        return bare.isEmpty() ? "k" : bare;
    }

    private static int firstNonPrintable(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < 0x20 || s.charAt(i) > 0x7e) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void harnessReportsTheSeedOfAFailure() {
        assertThatThrownBy(() -> forAll(50, r -> r.nextInt(10), n -> assertThat(n).isLessThan(5)))
                .isInstanceOf(AssertionError.class).hasMessageContaining("rerun with -Dretrysafe.seed=0x");
    }
}
