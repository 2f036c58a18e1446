package io.retrysafe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Named.named;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import io.retrysafe.InvalidKeyException.Rule;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class KeyRulesTest {
    private static final String UUID = "550e8400-e29b-41d4-a716-446655440000";
    private static final KeyRules RULES = KeyRules.DEFAULT;

    static Stream<Arguments> validHeaders() {
        return Stream.of(
                arguments(named("quoted string", "\"abc\""), "abc"),
                arguments(named("quoted UUID", "\"" + UUID + "\""), UUID),
                arguments(named("bare UUID", UUID), UUID),
                arguments(named("escaped quote", "\"a\\\"b\""), "a\"b"),
                arguments(named("escaped backslash", "\"a\\\\b\""), "a\\b"),
                arguments(named("only escapes", "\"\\\"\\\\\""), "\"\\"),
                arguments(named("spaces inside quotes are kept", "\" a b \""), " a b "),
                arguments(named("comma inside quotes is not a list", "\"a,b\""), "a,b"),
                arguments(named("OWS around a quoted string", " \t \"abc\" \t "), "abc"),
                arguments(named("OWS around a bare value", "  " + UUID + "\t"), UUID),
                arguments(named("bare printable punctuation", "a-b_c.d:e/f+g=h"), "a-b_c.d:e/f+g=h"),
                arguments(named("255 characters, bare", "k".repeat(255)), "k".repeat(255)),
                arguments(named("255 characters, quoted", "\"" + "k".repeat(255) + "\""), "k".repeat(255)),
                arguments(named("one character", "x"), "x"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("validHeaders")
    void parsesValidHeader(String fieldValue, String expectedKey) {
        assertThat(RULES.parseHeader(fieldValue)).isEqualTo(expectedKey);
        assertThat(RULES.parseHeader(List.of(fieldValue))).as("as the only field line").isEqualTo(expectedKey);
    }

    static Stream<Arguments> invalidHeaders() {
        return Stream.of(
                arguments(named("empty", ""), Rule.EMPTY),
                arguments(named("only white space", " \t "), Rule.EMPTY),
                arguments(named("empty quoted string", "\"\""), Rule.EMPTY),
                arguments(named("empty quoted string with OWS", "  \"\"  "), Rule.EMPTY),
                arguments(named("list of quoted strings", "\"a\", \"b\""), Rule.MULTIPLE_VALUES),
                arguments(named("quoted string and trailing comma", "\"a\","), Rule.MULTIPLE_VALUES),
                arguments(named("bare list", "a,b"), Rule.MULTIPLE_VALUES),
                arguments(named("bare list with OWS", "a, b"), Rule.MULTIPLE_VALUES),
                arguments(named("bare comma", ","), Rule.MULTIPLE_VALUES),
                arguments(named("unterminated quote", "\"abc"), Rule.MALFORMED),
                arguments(named("lone quote", "\""), Rule.MALFORMED),
                arguments(named("escape of a letter", "\"a\\nb\""), Rule.MALFORMED),
                arguments(named("escape at the end", "\"abc\\"), Rule.MALFORMED),
                arguments(named("escaped closing quote leaves it unterminated", "\"abc\\\""), Rule.MALFORMED),
                arguments(named("text after the closing quote", "\"abc\"def"), Rule.MALFORMED),
                arguments(named("parameter after the closing quote", "\"abc\";p=1"), Rule.MALFORMED),
                arguments(named("bare value with a space", "a b"), Rule.MALFORMED),
                arguments(named("bare value with a tab", "a\tb"), Rule.MALFORMED),
                arguments(named("bare value with a quote", "ab\"c"), Rule.MALFORMED),
                arguments(named("bare value with a backslash", "a\\b"), Rule.MALFORMED),
                arguments(named("non-ASCII, quoted", "\"caf\u00e9\""), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("non-ASCII, bare", "caf\u00e9"), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("emoji, bare", "key-\uD83D\uDE00"), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("control character, quoted", "\"a\u0001b\""), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("tab inside quotes", "\"a\tb\""), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("NUL, bare", "a\u0000b"), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("DEL, bare", "a\u007fb"), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("CR LF injection, bare", "a\r\nX-Evil:1"), Rule.NOT_PRINTABLE_ASCII),
                arguments(named("256 characters, bare", "k".repeat(256)), Rule.TOO_LONG),
                arguments(named("256 characters, quoted", "\"" + "k".repeat(256) + "\""), Rule.TOO_LONG));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("invalidHeaders")
    void rejectsInvalidHeaderNamingTheRule(String fieldValue, Rule rule) {
        assertThatThrownBy(() -> RULES.parseHeader(fieldValue))
                .isInstanceOfSatisfying(InvalidKeyException.class, e -> {
                    assertThat(e.rule()).isEqualTo(rule);
                    assertThat(e.httpStatus()).isEqualTo(400);
                });
    }

    @Test
    void missingHeaderIsMissing() {
        assertThatThrownBy(() -> RULES.parseHeader((String) null)).isInstanceOfSatisfying(InvalidKeyException.class,
                e -> assertThat(e.rule()).isEqualTo(Rule.MISSING)).hasMessage("Idempotency-Key header is missing");
        assertThatThrownBy(() -> RULES.parseHeader((List<String>) null)).isInstanceOfSatisfying(
                InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.MISSING));
        assertThatThrownBy(() -> RULES.parseHeader(List.of())).isInstanceOfSatisfying(InvalidKeyException.class,
                e -> assertThat(e.rule()).isEqualTo(Rule.MISSING));
        assertThatThrownBy(() -> RULES.parseHeader(Arrays.asList((String) null))).isInstanceOfSatisfying(
                InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.MISSING));
        assertThatThrownBy(() -> RULES.validate(null)).isInstanceOfSatisfying(InvalidKeyException.class,
                e -> assertThat(e.rule()).isEqualTo(Rule.MISSING));
    }

    @Test
    void severalFieldLinesAreMultipleValues() {
        assertThatThrownBy(() -> RULES.parseHeader(List.of("\"a\"", "\"b\"")))
                .isInstanceOfSatisfying(InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.MULTIPLE_VALUES))
                .hasMessage("Idempotency-Key header must have one value, but had 2");
        assertThatThrownBy(() -> RULES.parseHeader(List.of(UUID, UUID))).as("even when the lines are equal")
                .isInstanceOfSatisfying(InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.MULTIPLE_VALUES));
    }

    @Test
    void messagesNameTheRuleAndTheLimit() {
        assertThatThrownBy(() -> RULES.parseHeader("k".repeat(256)))
                .hasMessage("idempotency key must have at most 255 characters, but had 256");
        assertThatThrownBy(() -> RULES.parseHeader("ab\u00e9"))
                .hasMessage("idempotency key must be printable ASCII (0x20-0x7E), but has character 0xe9 at index 2");
        assertThatThrownBy(() -> RULES.parseHeader("\"ab\u0007\""))
                .hasMessage("idempotency key must be printable ASCII (0x20-0x7E), but has character 0x7 at index 2");
        assertThatThrownBy(() -> RULES.parseHeader("a,b"))
                .hasMessage("Idempotency-Key header must have one value, but had a list");
        assertThatThrownBy(() -> RULES.parseHeader("\"abc"))
                .hasMessage("Idempotency-Key string has no closing quote");
        assertThatThrownBy(() -> RULES.parseHeader("\"\"")).hasMessage("idempotency key is empty");
        assertThatThrownBy(() -> RULES.parseHeader("")).hasMessage("Idempotency-Key header is empty");
    }

    @Test
    void customMinimumLength() {
        KeyRules rules = KeyRules.custom().minLength(32).build();
        String thirtyTwo = "0123456789abcdef0123456789abcdef";

        assertThat(rules.parseHeader(thirtyTwo)).isEqualTo(thirtyTwo);
        assertThat(rules.validate(thirtyTwo)).isEqualTo(thirtyTwo);
        assertThatThrownBy(() -> rules.parseHeader(thirtyTwo.substring(1)))
                .isInstanceOfSatisfying(InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.TOO_SHORT))
                .hasMessage("idempotency key must have at least 32 characters, but had 31");
        assertThat(rules.minLength()).isEqualTo(32);
        assertThat(rules.maxLength()).isEqualTo(KeyRules.DEFAULT_MAX_LENGTH);
    }

    @Test
    void customMaximumLength() {
        KeyRules rules = KeyRules.custom().maxLength(36).build();

        assertThat(rules.validate(UUID)).isEqualTo(UUID);
        assertThatThrownBy(() -> rules.validate(UUID + "0"))
                .isInstanceOfSatisfying(InvalidKeyException.class, e -> assertThat(e.rule()).isEqualTo(Rule.TOO_LONG))
                .hasMessage("idempotency key must have at most 36 characters, but had 37");
    }

    @Test
    void validateAcceptsEveryPrintableCharacter() {
        StringBuilder all = new StringBuilder();
        for (char c = 0x20; c <= 0x7e; c++) {
            all.append(c);
        }
        assertThat(RULES.validate(all.toString())).isEqualTo(all.toString());
        assertThat(RULES.key("scope", all.toString()).value()).isEqualTo(all.toString());
    }

    @Test
    void builderRejectsOutOfRangeValues() {
        assertThatThrownBy(() -> KeyRules.custom().minLength(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("minLength must be between 1 and 255, but was 0");
        assertThatThrownBy(() -> KeyRules.custom().maxLength(256)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxLength must be between 1 and 255, but was 256");
        assertThatThrownBy(() -> KeyRules.custom().maxLength(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxLength must be between 1 and 255, but was 0");
        assertThatThrownBy(() -> KeyRules.custom().minLength(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("minLength must be between 1 and 255, but was -1");
    }

    @Test
    void builderRejectsMinimumAboveMaximum() {
        assertThatThrownBy(() -> KeyRules.custom().minLength(40).maxLength(36).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("minLength must not exceed maxLength, but was minLength=40, maxLength=36");
        assertThat(KeyRules.custom().minLength(36).maxLength(36).build().minLength()).isEqualTo(36);
    }

    @Test
    void defaults() {
        assertThat(KeyRules.DEFAULT.minLength()).isEqualTo(KeyRules.DEFAULT_MIN_LENGTH).isEqualTo(1);
        assertThat(KeyRules.DEFAULT.maxLength()).isEqualTo(KeyRules.DEFAULT_MAX_LENGTH).isEqualTo(255);
    }

    @Test
    void keyCarriesItsScopeAndNeverShowsTheRawValue() {
        IdempotencyKey key = RULES.key("user-42:payments", "secret-" + UUID);

        assertThat(key.scope()).isEqualTo("user-42:payments");
        assertThat(key.value()).isEqualTo("secret-" + UUID);
        assertThat(key.toString()).doesNotContain(UUID).contains(key.digest());
        assertThat(key.digest()).hasSize(12).isNotEqualTo(RULES.key("user-43:payments", "secret-" + UUID).digest());
        assertThat(key).isEqualTo(IdempotencyKey.of("user-42:payments", "secret-" + UUID))
                .isNotEqualTo(IdempotencyKey.of("user-43:payments", "secret-" + UUID));
    }

    @Test
    void keyRejectsEmptyOrOverlongScope() {
        assertThatThrownBy(() -> IdempotencyKey.of("", "k")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("scope must not be empty, but was \"\"");
        assertThatThrownBy(() -> IdempotencyKey.of(null, "k")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("scope must not be empty, but was null");
        assertThatThrownBy(() -> IdempotencyKey.of("s".repeat(256), "k")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("scope must have at most 255 characters, but had 256");
        assertThat(IdempotencyKey.of("s".repeat(255), "k").scope()).hasSize(255);
    }
}
