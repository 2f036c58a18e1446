package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Named.named;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import io.retrysafe.KeyLint.Finding;
import io.retrysafe.KeyLint.LintReport;
import io.retrysafe.KeyLint.Severity;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class KeyLintTest {
    /** 2024-06-30T12:00:00Z: the keys below that look like times are near it. */
    private static final Instant NOW = Instant.parse("2024-06-30T12:00:00Z");
    private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

    private static final String V4 = "9b2f6c1e-3d4a-4f8b-a1c2-7e5d9f0b3a64";
    private static final String V7 = "01906b4e-2a3f-7c81-9d2e-4b6a8f1c0e37";
    private static final String V1 = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";

    static Stream<Arguments> keys() {
        return Stream.of(
                // good keys: no finding
                arguments(named("UUID v4", V4), List.of(), 122),
                arguments(named("UUID v4, upper case", V4.toUpperCase()), List.of(), 122),
                arguments(named("UUID v7", V7), List.of(), 74),
                arguments(named("prefixed UUID v7", "pay_" + V7), List.of(), 74),
                arguments(named("intent key (SHA-256 hex)",
                        IdempotencyKeys.intent("user-42", "create-payment", "{}".getBytes(UTF_8))), List.of(), 256),
                arguments(named("32 hex digits", "3f9a1c7be04d5a6f8e2b9c0d1e7f4a3b"), List.of(), 128),
                arguments(named("base64url of 16 random bytes", "n2X8vQ_kR3-pLm0aZ7tYcw"), List.of(), 132),
                arguments(named("natural key with a business date", "invoice-2024-06-30-acct-7f3a9c1e2b"), List.of(), -1),

                // refused by KeyRules
                arguments(named("empty", ""), List.of("empty"), 0),
                arguments(named("256 characters", "k".repeat(256)), List.of("too_long", "low_entropy"), 5),
                arguments(named("non-ASCII", "schlüssel-9b2f6c1e3d4a4f8b"), List.of("not_printable_ascii"), -1),
                arguments(named("control character", "abc\n9b2f6c1e3d4a4f8ba1c27e5d"), List.of("not_printable_ascii"), -1),

                // accepted, but poor
                arguments(named("short", "x7Qp2"), List.of("short", "low_entropy"), -1),
                arguments(named("one repeated character", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), List.of("low_entropy"), 4),
                arguments(named("repeated block", "abc123abc123abc123abc123abc123"), List.of("low_entropy"), 24),
                arguments(named("epoch milliseconds", "1719748800123"), List.of("short", "low_entropy", "timestamp"), -1),
                arguments(named("epoch seconds", "1719748800"), List.of("short", "low_entropy", "timestamp"), 33),
                arguments(named("prefixed epoch milliseconds", "order-1719748800123"), List.of("timestamp"), -1),
                arguments(named("ISO-8601 date-time", "2024-06-30T11:59:58.123Z"), List.of("timestamp"), -1),
                arguments(named("ISO-8601 date-time in a natural key", "acct-42:2024-06-30T11:59:58Z:transfer"),
                        List.of("timestamp"), -1),
                arguments(named("yyyyMMddHHmmss", "20240630115958"), List.of("short", "low_entropy", "timestamp"), -1),
                arguments(named("yyyyMMddHHmmssSSS with a prefix", "pay-20240630115958123"), List.of("timestamp"), -1),
                arguments(named("prefix and counter", "order-17"), List.of("short", "low_entropy", "sequential"), -1),
                arguments(named("longer prefix and zero-padded counter", "invoice_payment_000123"),
                        List.of("sequential"), -1),
                arguments(named("small number", "4711"), List.of("short", "low_entropy", "sequential"), -1),
                arguments(named("UUID v1 (time and MAC)", V1), List.of("low_entropy", "uuid_v1"), 14),
                arguments(named("nil UUID", "00000000-0000-0000-0000-000000000000"), List.of("low_entropy"), 0),
                arguments(named("space inside", "9b2f6c1e 3d4a4f8b a1c27e5d9f0b3a64"), List.of("needs_quoting"), -1),
                arguments(named("comma inside", "9b2f6c1e3d4a4f8b,a1c27e5d9f0b3a64"), List.of("needs_quoting"), -1));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("keys")
    void lints(String key, List<String> expectedCodes, int expectedBits) {
        LintReport report = KeyLint.lint(key, KeyRules.DEFAULT, CLOCK);

        assertThat(report.codes()).as(report.toString()).containsExactlyElementsOf(expectedCodes);
        assertThat(report.key()).isEqualTo(key);
        if (expectedBits >= 0) {
            assertThat(report.estimatedEntropyBits()).isCloseTo((double) expectedBits, within(0.5));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("keys")
    void errorExactlyWhenKeyRulesRefuses(String key, List<String> expectedCodes, int expectedBits) {
        LintReport report = KeyLint.lint(key, KeyRules.DEFAULT, CLOCK);
        boolean refused;
        try {
            KeyRules.DEFAULT.validate(key);
            refused = false;
        } catch (InvalidKeyException e) {
            refused = true;
        }

        assertThat(report.hasErrors()).isEqualTo(refused);
        assertThat(report.findings()).as("errors first").isSortedAccordingTo(
                (a, b) -> a.severity().compareTo(b.severity()));
    }

    @Test
    void generatedKeysAreClean() {
        for (int i = 0; i < 1_000; i++) {
            for (String key : List.of(IdempotencyKeys.uuidV7(), IdempotencyKeys.uuidV4(),
                    IdempotencyKeys.intent("user-" + i, "op", new byte[] {(byte) i}))) {
                LintReport report = KeyLint.lint(key);
                assertThat(report.isClean()).as(key + ": " + report).isTrue();
                assertThat(report.estimatedEntropyBits()).isGreaterThanOrEqualTo(KeyLint.RECOMMENDED_MIN_ENTROPY_BITS);
            }
        }
    }

    @Test
    void epochNumbersCountAsTimestampsOnlyNearNow() {
        long twentyYearsAgo = NOW.minusSeconds(20L * 366 * 86_400).toEpochMilli();

        assertThat(KeyLint.lint(Long.toString(twentyYearsAgo), KeyRules.DEFAULT, CLOCK).codes())
                .doesNotContain(KeyLint.TIMESTAMP);
        assertThat(KeyLint.lint(Long.toString(NOW.minusSeconds(86_400).toEpochMilli()), KeyRules.DEFAULT, CLOCK).codes())
                .contains(KeyLint.TIMESTAMP);
        assertThat(KeyLint.lint(Long.toString(NOW.getEpochSecond() * 1_000_000_000L), KeyRules.DEFAULT, CLOCK).codes())
                .as("epoch nanoseconds").contains(KeyLint.TIMESTAMP);
        assertThat(KeyLint.lint(Long.toString(System.currentTimeMillis())).codes())
                .as("with the system clock").contains(KeyLint.TIMESTAMP);
    }

    @Test
    void aPlainDateIsNotATimestamp() {
        assertThat(KeyLint.lint("settlement:" + LocalDate.of(2024, 6, 30) + ":" + IdempotencyKeys.uuidV4(),
                KeyRules.DEFAULT, CLOCK).isClean()).isTrue();
    }

    @Test
    void aServersMinimumLengthIsAnError() {
        KeyRules rules = KeyRules.custom().minLength(32).build();

        LintReport report = KeyLint.lint("n2X8vQ_kR3-pLm0aZ7tYcw", rules, CLOCK);

        assertThat(report.findings()).containsExactly(new Finding(Severity.ERROR, "too_short",
                "idempotency key must have at least 32 characters, but had 22"));
    }

    @Test
    void missingKeyIsAnError() {
        LintReport report = KeyLint.lint(null);

        assertThat(report.codes()).containsExactly("missing");
        assertThat(report.hasErrors()).isTrue();
        assertThat(report.estimatedEntropyBits()).isZero();
    }

    @Test
    void reportDoesNotShowTheKey() {
        String key = "order-17";

        assertThat(KeyLint.lint(key).toString()).doesNotContain(key).contains("length=8");
    }
}
