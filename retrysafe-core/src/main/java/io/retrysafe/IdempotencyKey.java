package io.retrysafe;

import io.retrysafe.internal.Hex;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Objects;

/**
 * A key together with its scope. The scope names whose intent this is (the authenticated principal
 * or tenant) and which operation, so one user's key can never replay another user's response.
 *
 * <p>{@link #toString()} never shows the raw key, only {@link #digest()}: keys are bearer-like
 * secrets in logs.
 */
public final class IdempotencyKey {
    /** The longest scope any store accepts. */
    public static final int MAX_SCOPE_LENGTH = 255;

    private final String scope;
    private final String value;
    /**
     * {@link #hash()}, made on first use: the logs, the metrics and a store may each ask for it on one request.
     * Not volatile: a thread that sees null makes the same string again, and a string is safe to share.
     */
    private String hash;

    IdempotencyKey(String scope, String value) {
        if (scope == null || scope.isEmpty()) {
            throw new IllegalArgumentException("scope must not be empty, but was " + (scope == null ? "null" : "\"\""));
        }
        if (scope.length() > MAX_SCOPE_LENGTH) {
            throw new IllegalArgumentException(
                    "scope must have at most " + MAX_SCOPE_LENGTH + " characters, but had " + scope.length());
        }
        this.scope = scope;
        this.value = value;
    }

    /** A key checked against {@link KeyRules#DEFAULT}. */
    public static IdempotencyKey of(String scope, String value) {
        return KeyRules.DEFAULT.key(scope, value);
    }

    public String scope() {
        return scope;
    }

    public String value() {
        return value;
    }

    /** The first 12 hex digits of SHA-256 over scope and key: enough to correlate log lines, useless to replay. */
    public String digest() {
        return hash().substring(0, 12);
    }

    /**
     * SHA-256 over UTF-8 scope, a 0x00 byte and the key, in 64 lower-case hex digits: the name a store
     * gives the record where the raw key must not appear (a Redis key, a DynamoDB partition key). A key
     * is printable ASCII, so the separator cannot be confused with part of it.
     */
    public String hash() {
        String h = hash;
        if (h == null) {
            MessageDigest sha = Hex.sha256();
            sha.update(scope.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(value.getBytes(StandardCharsets.US_ASCII));
            h = Hex.encode(sha.digest());
            hash = h;
        }
        return h;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IdempotencyKey other && scope.equals(other.scope) && value.equals(other.value);
    }

    @Override
    public int hashCode() {
        return Objects.hash(scope, value);
    }

    @Override
    public String toString() {
        return "IdempotencyKey[scope=" + scope + ", digest=" + digest() + "]";
    }
}
