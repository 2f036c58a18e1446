package io.retrysafe;

import io.retrysafe.internal.Require;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks a key the way a reviewer would: {@link Severity#ERROR} for what {@link KeyRules} refuses
 * (the server answers {@code 400}), {@link Severity#WARNING} for keys that the server accepts but
 * that will not protect an intent well. For a test suite, a CLI or a client's start-up check;
 * never on the request path (the server cannot tell a good key from a lucky one).
 *
 * <pre>{@code
 * KeyLint.LintReport report = KeyLint.lint("order-17");
 * report.codes();                  // [short, low_entropy, sequential]
 * }</pre>
 *
 * <table>
 * <caption>Findings; the codes are stable</caption>
 * <tr><th>code</th><th>severity</th><th>when</th></tr>
 * <tr><td>{@code missing}, {@code empty}, {@code not_printable_ascii}, {@code too_short}, {@code too_long}</td>
 *     <td>ERROR</td><td>{@link KeyRules} refuses the key (the names of {@link InvalidKeyException.Rule},
 *     as the servlet's {@code rule} member)</td></tr>
 * <tr><td>{@code short}</td><td>WARNING</td><td>under {@value #RECOMMENDED_MIN_LENGTH} characters</td></tr>
 * <tr><td>{@code low_entropy}</td><td>WARNING</td><td>estimated entropy under {@value #RECOMMENDED_MIN_ENTROPY_BITS}
 *     bits: another client, or an attacker, could hit the same key</td></tr>
 * <tr><td>{@code timestamp}</td><td>WARNING</td><td>looks like a time: epoch seconds, milliseconds, microseconds
 *     or nanoseconds within {@link #TIMESTAMP_WINDOW} of now, an ISO-8601 date-time, {@code yyyyMMddHHmmss[SSS]}</td></tr>
 * <tr><td>{@code sequential}</td><td>WARNING</td><td>looks like a counter: all digits and under 10 of them, or a
 *     short prefix and a small number ({@code order-17})</td></tr>
 * <tr><td>{@code uuid_v1}</td><td>WARNING</td><td>a version 1 UUID: a timestamp and the MAC address of its host</td></tr>
 * <tr><td>{@code needs_quoting}</td><td>WARNING</td><td>contains a space, tab, comma, quote or backslash: valid, but
 *     must be sent as a quoted string ({@code Idempotency-Key: "a b"}), which many clients do not do</td></tr>
 * </table>
 *
 * <h2>The entropy estimate</h2>
 *
 * A UUID is recognised (also inside a longer key, such as {@code pay_<uuid>}) and counted by its
 * random bits: version 4 has 122, version 7 has 74, versions 3, 5 and 8 count as 122 (their bits are
 * a hash or the application's), versions 1 and 6 only their 14-bit clock sequence, the nil and max
 * UUIDs none. Any other key counts {@code length × log2(alphabet)}, where the alphabet is the union of
 * the character classes it uses (10 digits; 16 for hex, in one case; 26 lower-case; 26 upper-case;
 * 2 more for base64's {@code - _ + /}; 33 for any other punctuation), with base64 padding
 * ({@code =}) not counted. A repetition check caps the length counted: a key that repeats a block
 * ({@code abcabcabc}) counts the block only, and a run of one character counts at most two
 * ({@code aaaabbbb} counts 4). It is an upper bound of
 * what a key can hold, not a measure of how it was made: {@code intent} keys count 256 bits even when
 * their payload is guessable, and a word counts as random letters.
 *
 * <p>A version 7 UUID is not {@code timestamp}: its time is when the key was made, once per intent,
 * not when a request was sent; retries keep it. A plain date ({@code 2024-06-30}) is not a
 * {@code timestamp} either: it is usually a business date that belongs to the intent.
 */
public final class KeyLint {
    /** Below this length a key gets {@code short}. */
    public static final int RECOMMENDED_MIN_LENGTH = 16;
    /** Below this estimated entropy a key gets {@code low_entropy}; 64 bits make an accidental collision negligible. */
    public static final int RECOMMENDED_MIN_ENTROPY_BITS = 64;
    /** How far from now an epoch number may be to count as a timestamp. */
    public static final Duration TIMESTAMP_WINDOW = Duration.ofDays(3653);

    public static final String SHORT = "short";
    public static final String LOW_ENTROPY = "low_entropy";
    public static final String TIMESTAMP = "timestamp";
    public static final String SEQUENTIAL = "sequential";
    public static final String UUID_V1 = "uuid_v1";
    public static final String NEEDS_QUOTING = "needs_quoting";

    private static final Pattern UUID = Pattern.compile(
            "(?<![0-9A-Fa-f])([0-9A-Fa-f]{8})-([0-9A-Fa-f]{4})-([0-9A-Fa-f])([0-9A-Fa-f]{3})-([0-9A-Fa-f])([0-9A-Fa-f]{3})"
                    + "-([0-9A-Fa-f]{12})(?![0-9A-Fa-f])");
    /** A run of digits not inside a hex string, so that random hex keys do not look like times. */
    private static final Pattern DIGIT_RUN = Pattern.compile("(?<![0-9A-Fa-f])[0-9]+(?![0-9A-Fa-f])");
    private static final Pattern ISO_DATE_TIME = Pattern.compile(
            "\\d{4}-\\d{2}-\\d{2}[Tt _]\\d{2}:?\\d{2}|\\d{8}[Tt]\\d{4}");
    private static final Pattern COUNTER = Pattern.compile("[A-Za-z][A-Za-z_.:/#-]{0,23}\\d{1,9}");

    private KeyLint() {
    }

    public enum Severity {
        /** {@link KeyRules} refuses the key: the server answers {@code 400}. */
        ERROR,
        /** Accepted, but a poor key. */
        WARNING
    }

    /** One thing wrong with a key; {@code code} is stable, {@code message} is for people. */
    public record Finding(Severity severity, String code, String message) {
        public Finding {
            Require.notNull(severity, "severity");
            Require.notNull(code, "code");
            Require.notNull(message, "message");
        }
    }

    /**
     * The findings for one key, errors first, and the estimated entropy in bits. {@link #toString()}
     * leaves the key out, so a report may be logged.
     */
    public record LintReport(String key, List<Finding> findings, double estimatedEntropyBits) {
        public LintReport {
            findings = List.copyOf(findings);
        }

        /** Whether {@link KeyRules} refuses the key. */
        public boolean hasErrors() {
            return findings.stream().anyMatch(f -> f.severity() == Severity.ERROR);
        }

        /** No finding at all. */
        public boolean isClean() {
            return findings.isEmpty();
        }

        public List<String> codes() {
            return findings.stream().map(Finding::code).toList();
        }

        @Override
        public String toString() {
            return "LintReport[length=" + (key == null ? "null" : key.length()) + ", findings=" + findings
                    + ", estimatedEntropyBits=" + String.format(Locale.ROOT, "%.1f", estimatedEntropyBits) + "]";
        }
    }

    /** Lints against {@link KeyRules#DEFAULT} and the system clock. */
    public static LintReport lint(String key) {
        return lint(key, KeyRules.DEFAULT, Clock.systemUTC());
    }

    /**
     * Lints against the given rules (the server's, for its {@code minLength}) and clock (for
     * {@code timestamp}).
     */
    public static LintReport lint(String key, KeyRules rules, Clock clock) {
        Require.notNull(rules, "rules");
        Require.notNull(clock, "clock");
        List<Finding> findings = new ArrayList<>();
        try {
            rules.validate(key);
        } catch (InvalidKeyException e) {
            findings.add(new Finding(Severity.ERROR, code(e.rule()), e.getMessage()));
            // KeyRules stops at the first rule broken; a key outside printable ASCII may break a length rule too.
            if (e.rule() == InvalidKeyException.Rule.NOT_PRINTABLE_ASCII && key.length() > rules.maxLength()) {
                findings.add(new Finding(Severity.ERROR, code(InvalidKeyException.Rule.TOO_LONG),
                        "idempotency key must have at most " + rules.maxLength() + " characters, but had " + key.length()));
            } else if (e.rule() == InvalidKeyException.Rule.NOT_PRINTABLE_ASCII && key.length() < rules.minLength()) {
                findings.add(new Finding(Severity.ERROR, code(InvalidKeyException.Rule.TOO_SHORT),
                        "idempotency key must have at least " + rules.minLength() + " characters, but had " + key.length()));
            }
        }
        if (key == null || key.isEmpty()) {
            return new LintReport(key, findings, 0);
        }
        double entropy = estimateEntropyBits(key);
        if (key.length() < RECOMMENDED_MIN_LENGTH) {
            findings.add(warning(SHORT, "key has " + key.length() + " characters, but should have at least "
                    + RECOMMENDED_MIN_LENGTH + " so that it cannot collide with another client's or be guessed"));
        }
        if (entropy < RECOMMENDED_MIN_ENTROPY_BITS) {
            findings.add(warning(LOW_ENTROPY, String.format(Locale.ROOT, "key holds about %.0f bits of entropy, but "
                    + "should hold at least %d; use IdempotencyKeys.uuidV7()", entropy, RECOMMENDED_MIN_ENTROPY_BITS)));
        }
        String timestamp = timestamp(key, clock.instant());
        if (timestamp != null) {
            findings.add(warning(TIMESTAMP, "key looks like " + timestamp + "; a time of sending changes on every "
                    + "retry and is shared by requests made at the same moment, so it must not be (part of) a key"));
        }
        String counter = counter(key);
        if (counter != null) {
            findings.add(warning(SEQUENTIAL, "key looks like " + counter + "; counters restart, collide across "
                    + "clients and are guessable"));
        }
        Matcher uuid = UUID.matcher(key);
        if (uuid.find() && uuid.group(3).equals("1")) {
            findings.add(warning(UUID_V1, "key is a version 1 UUID: it holds the time it was made and the MAC address "
                    + "of its host, and only 14 random bits; use a version 7 or 4 UUID"));
        }
        if (needsQuoting(key)) {
            findings.add(warning(NEEDS_QUOTING, "key contains a space, tab, comma, quote or backslash; it must be sent "
                    + "as a quoted string (Idempotency-Key: \"…\"), and many clients send it bare"));
        }
        return new LintReport(key, findings, entropy);
    }

    private static Finding warning(String code, String message) {
        return new Finding(Severity.WARNING, code, message);
    }

    private static String code(InvalidKeyException.Rule rule) {
        return rule.name().toLowerCase(Locale.ROOT);
    }

    // ---- entropy

    static double estimateEntropyBits(String key) {
        Matcher uuid = UUID.matcher(key);
        if (uuid.find()) {
            return uuidRandomBits(uuid);
        }
        int end = key.length();
        while (end > 0 && key.charAt(end - 1) == '=') {
            end--;
        }
        String s = key.substring(0, end);
        if (s.isEmpty()) {
            return 0;
        }
        double bitsPerChar = log2(alphabet(s));
        int effectiveLength = Math.min(s.length(), Math.min(shortestPeriod(s), runs(s)));
        return effectiveLength * bitsPerChar;
    }

    private static double uuidRandomBits(Matcher uuid) {
        String all = (uuid.group(1) + uuid.group(2) + uuid.group(3) + uuid.group(4) + uuid.group(5) + uuid.group(6)
                + uuid.group(7)).toLowerCase(Locale.ROOT);
        if (all.chars().allMatch(c -> c == '0') || all.chars().allMatch(c -> c == 'f')) {
            return 0;
        }
        return switch (uuid.group(3)) {
            case "4", "3", "5", "8" -> 122;
            case "7" -> 74;
            case "1", "6" -> 14;
            default -> 0; // version 0, 2 or 9-f: not a UUID any generator makes at random
        };
    }

    private static int alphabet(String s) {
        boolean digit = false;
        boolean lower = false;
        boolean upper = false;
        boolean lowerHex = true;
        boolean upperHex = true;
        boolean base64Punct = false;
        boolean otherPunct = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                digit = true;
            } else if (c >= 'a' && c <= 'z') {
                lower = true;
                upperHex = false;
                lowerHex &= c <= 'f';
            } else if (c >= 'A' && c <= 'Z') {
                upper = true;
                lowerHex = false;
                upperHex &= c <= 'F';
            } else {
                lowerHex = false;
                upperHex = false;
                if (c == '-' || c == '_' || c == '+' || c == '/') {
                    base64Punct = true;
                } else {
                    otherPunct = true;
                }
            }
        }
        if ((lower || upper) && (lowerHex || upperHex)) {
            return 16;
        }
        int size = (digit ? 10 : 0) + (lower ? 26 : 0) + (upper ? 26 : 0) + (otherPunct ? 33 : base64Punct ? 2 : 0);
        return Math.max(size, 1);
    }

    /**
     * The length with every run of one character cut to two ({@code aaaabbbb} counts 4): a pair
     * happens by chance in random keys, a longer run hardly.
     */
    private static int runs(String s) {
        int counted = Math.min(s.length(), 2);
        for (int i = 2; i < s.length(); i++) {
            if (s.charAt(i) != s.charAt(i - 1) || s.charAt(i) != s.charAt(i - 2)) {
                counted++;
            }
        }
        return counted;
    }

    /** The shortest p such that the string repeats itself every p characters (the last repetition may be cut off). */
    private static int shortestPeriod(String s) {
        int n = s.length();
        int[] failure = new int[n];
        for (int i = 1, k = 0; i < n; i++) {
            while (k > 0 && s.charAt(i) != s.charAt(k)) {
                k = failure[k - 1];
            }
            if (s.charAt(i) == s.charAt(k)) {
                k++;
            }
            failure[i] = k;
        }
        return n - failure[n - 1];
    }

    private static double log2(double x) {
        return x <= 1 ? 0 : Math.log(x) / Math.log(2);
    }

    // ---- timestamps and counters

    /** What time the key looks like, or null. */
    private static String timestamp(String key, Instant now) {
        Matcher uuid = UUID.matcher(key);
        String rest = uuid.replaceAll("");
        Matcher iso = ISO_DATE_TIME.matcher(rest);
        if (iso.find()) {
            return "an ISO-8601 date-time";
        }
        Matcher run = DIGIT_RUN.matcher(rest);
        while (run.find()) {
            String digits = run.group();
            String epoch = switch (digits.length()) {
                case 10 -> nearNow(digits, now, 1_000_000_000L, "epoch seconds");
                case 13 -> nearNow(digits, now, 1_000_000L, "epoch milliseconds");
                case 16 -> nearNow(digits, now, 1_000L, "epoch microseconds");
                case 19 -> nearNow(digits, now, 1L, "epoch nanoseconds");
                case 14, 17 -> compactDateTime(digits);
                default -> null;
            };
            if (epoch != null) {
                return epoch;
            }
        }
        return null;
    }

    /** {@code digits} as a time since the epoch in units of {@code nanosPerUnit}, if within the window of now. */
    private static String nearNow(String digits, Instant now, long nanosPerUnit, String what) {
        long value;
        try {
            value = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return null; // 19 digits over Long.MAX_VALUE: far from now anyway
        }
        Instant t = Instant.ofEpochSecond(value / (1_000_000_000L / nanosPerUnit),
                value % (1_000_000_000L / nanosPerUnit) * nanosPerUnit);
        if (Duration.between(t, now).abs().compareTo(TIMESTAMP_WINDOW) <= 0) {
            return what + " (" + t + ")";
        }
        return null;
    }

    /** yyyyMMddHHmmss or yyyyMMddHHmmssSSS with a real date and time between 1970 and 2199. */
    private static String compactDateTime(String digits) {
        int year = Integer.parseInt(digits.substring(0, 4));
        if (year < 1970 || year > 2199) {
            return null;
        }
        try {
            LocalDateTime.of(year, Integer.parseInt(digits.substring(4, 6)), Integer.parseInt(digits.substring(6, 8)),
                    Integer.parseInt(digits.substring(8, 10)), Integer.parseInt(digits.substring(10, 12)),
                    Integer.parseInt(digits.substring(12, 14)));
            return digits.length() == 14 ? "yyyyMMddHHmmss" : "yyyyMMddHHmmssSSS";
        } catch (DateTimeException e) {
            return null;
        }
    }

    /** What counter the key looks like, or null. */
    private static String counter(String key) {
        if (key.length() < 10 && key.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return "a number under 10 digits";
        }
        if (COUNTER.matcher(key).matches()) {
            return "a prefix and a number";
        }
        return null;
    }

    private static boolean needsQuoting(String key) {
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == ' ' || c == '\t' || c == ',' || c == '"' || c == '\\') {
                return true;
            }
        }
        return false;
    }
}
