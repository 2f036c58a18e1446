package io.retrysafe;

import io.retrysafe.InvalidKeyException.Rule;
import io.retrysafe.internal.Require;
import java.util.List;

/**
 * What a key must look like: a length range and printable ASCII only. Also parses the
 * {@code Idempotency-Key} header, whose value is an RFC 8941 string ({@code "…"}); an unquoted value
 * is accepted too, because most clients send a bare UUID.
 *
 * <pre>{@code
 * KeyRules rules = KeyRules.custom().minLength(32).build();
 * IdempotencyKey key = rules.key("user-42:create-payment", rules.parseHeader(request.getHeaders("Idempotency-Key")));
 * }</pre>
 */
public final class KeyRules {
    public static final int DEFAULT_MIN_LENGTH = 1;
    public static final int DEFAULT_MAX_LENGTH = 255;
    /** The longest key any store accepts; stores size their key column for it. */
    public static final int MAX_LENGTH = 255;

    public static final KeyRules DEFAULT = custom().build();

    private final int minLength;
    private final int maxLength;

    private KeyRules(Builder builder) {
        this.minLength = builder.minLength;
        this.maxLength = builder.maxLength;
    }

    public static Builder custom() {
        return new Builder();
    }

    public int minLength() {
        return minLength;
    }

    public int maxLength() {
        return maxLength;
    }

    /** Builds a key after checking its value against these rules. */
    public IdempotencyKey key(String scope, String value) {
        return new IdempotencyKey(scope, validate(value));
    }

    /** Returns {@code value} if it satisfies these rules, or throws naming the rule broken and its limit. */
    public String validate(String value) {
        if (value == null) {
            throw new InvalidKeyException(Rule.MISSING, "idempotency key is missing");
        }
        if (value.isEmpty()) {
            throw new InvalidKeyException(Rule.EMPTY, "idempotency key is empty");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                throw new InvalidKeyException(Rule.NOT_PRINTABLE_ASCII,
                        "idempotency key must be printable ASCII (0x20-0x7E), but has character 0x"
                                + Integer.toHexString(c) + " at index " + i);
            }
        }
        if (value.length() < minLength) {
            throw new InvalidKeyException(Rule.TOO_SHORT,
                    "idempotency key must have at least " + minLength + " characters, but had " + value.length());
        }
        if (value.length() > maxLength) {
            throw new InvalidKeyException(Rule.TOO_LONG,
                    "idempotency key must have at most " + maxLength + " characters, but had " + value.length());
        }
        return value;
    }

    /**
     * Parses the field lines of an {@code Idempotency-Key} header (as a servlet container returns
     * them). No line is {@link Rule#MISSING}; more than one, or a list inside one, is
     * {@link Rule#MULTIPLE_VALUES}.
     */
    public String parseHeader(List<String> fieldLines) {
        if (fieldLines == null || fieldLines.isEmpty()) {
            throw new InvalidKeyException(Rule.MISSING, "Idempotency-Key header is missing");
        }
        if (fieldLines.size() > 1) {
            throw new InvalidKeyException(Rule.MULTIPLE_VALUES,
                    "Idempotency-Key header must have one value, but had " + fieldLines.size());
        }
        return parseHeader(fieldLines.get(0));
    }

    /** Parses one {@code Idempotency-Key} field value: {@code "abc"} or {@code abc}. */
    public String parseHeader(String fieldValue) {
        if (fieldValue == null) {
            throw new InvalidKeyException(Rule.MISSING, "Idempotency-Key header is missing");
        }
        String trimmed = stripOws(fieldValue);
        if (trimmed.isEmpty()) {
            throw new InvalidKeyException(Rule.EMPTY, "Idempotency-Key header is empty");
        }
        return validate(trimmed.charAt(0) == '"' ? parseString(trimmed) : parseBare(trimmed));
    }

    private static String parseString(String s) {
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\') {
                if (i + 1 >= s.length() || (s.charAt(i + 1) != '"' && s.charAt(i + 1) != '\\')) {
                    throw new InvalidKeyException(Rule.MALFORMED,
                            "Idempotency-Key string may escape only '\"' and '\\', at index " + i);
                }
                out.append(s.charAt(++i));
            } else if (c == '"') {
                String rest = stripOws(s.substring(i + 1));
                if (!rest.isEmpty()) {
                    throw new InvalidKeyException(rest.charAt(0) == ',' ? Rule.MULTIPLE_VALUES : Rule.MALFORMED,
                            rest.charAt(0) == ',' ? "Idempotency-Key header must have one value, but had a list"
                                    : "Idempotency-Key header has characters after the closing quote");
                }
                return out.toString();
            } else if (c < 0x20 || c > 0x7e) {
                throw new InvalidKeyException(Rule.NOT_PRINTABLE_ASCII,
                        "idempotency key must be printable ASCII (0x20-0x7E), but has character 0x"
                                + Integer.toHexString(c) + " at index " + (out.length()));
            } else {
                out.append(c);
            }
        }
        throw new InvalidKeyException(Rule.MALFORMED, "Idempotency-Key string has no closing quote");
    }

    private static String parseBare(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == ',') {
                throw new InvalidKeyException(Rule.MULTIPLE_VALUES,
                        "Idempotency-Key header must have one value, but had a list");
            }
            if (c == ' ' || c == '\t' || c == '"' || c == '\\') {
                throw new InvalidKeyException(Rule.MALFORMED,
                        "an unquoted Idempotency-Key must not contain spaces, quotes or backslashes; quote it as \"…\"");
            }
        }
        return s;
    }

    private static String stripOws(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && (s.charAt(start) == ' ' || s.charAt(start) == '\t')) {
            start++;
        }
        while (end > start && (s.charAt(end - 1) == ' ' || s.charAt(end - 1) == '\t')) {
            end--;
        }
        return s.substring(start, end);
    }

    @Override
    public String toString() {
        return "KeyRules[minLength=" + minLength + ", maxLength=" + maxLength + "]";
    }

    public static final class Builder {
        private int minLength = DEFAULT_MIN_LENGTH;
        private int maxLength = DEFAULT_MAX_LENGTH;

        private Builder() {
        }

        /** Shortest accepted key; teams often require 16 or 32 so that keys carry enough entropy. */
        public Builder minLength(int minLength) {
            this.minLength = Require.between(minLength, 1, MAX_LENGTH, "minLength");
            return this;
        }

        public Builder maxLength(int maxLength) {
            this.maxLength = Require.between(maxLength, 1, MAX_LENGTH, "maxLength");
            return this;
        }

        public KeyRules build() {
            if (minLength > maxLength) {
                throw new IllegalStateException(
                        "minLength must not exceed maxLength, but was minLength=" + minLength + ", maxLength=" + maxLength);
            }
            return new KeyRules(this);
        }
    }
}
