package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.US_ASCII;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Require;

/**
 * The Redis key layout shared by the store and the fast filter:
 * {@code prefix + "{" + hex(sha256(UTF-8(scope) 0x00 UTF-8(key))) + "}"}. The key the client sent
 * never reaches a key name, and the braces are a cluster hash tag.
 */
final class RedisKeys {
    static final int MAX_PREFIX_LENGTH = 64;
    private static final String PREFIX_FORBIDDEN = "{}*?[]\\";

    private RedisKeys() {
    }

    /**
     * 1 to {@value #MAX_PREFIX_LENGTH} printable ASCII characters, without space, braces (they would
     * move the hash tag) or glob characters (they would break {@code SCAN MATCH} and ACL patterns).
     */
    static String checkPrefix(String keyPrefix) {
        Require.notNull(keyPrefix, "keyPrefix");
        if (keyPrefix.isEmpty() || keyPrefix.length() > MAX_PREFIX_LENGTH) {
            throw new IllegalArgumentException("keyPrefix must have 1 to " + MAX_PREFIX_LENGTH
                    + " characters, but had " + keyPrefix.length());
        }
        for (int i = 0; i < keyPrefix.length(); i++) {
            char c = keyPrefix.charAt(i);
            if (c <= 0x20 || c > 0x7e || PREFIX_FORBIDDEN.indexOf(c) >= 0) {
                throw new IllegalArgumentException("keyPrefix must be printable ASCII without space, braces or "
                        + "glob characters (" + PREFIX_FORBIDDEN + "), but was \"" + keyPrefix
                        + "\" (character " + (c > 0x20 && c <= 0x7e ? "'" + c + "'" : "0x" + Integer.toHexString(c))
                        + " at index " + i + ")");
            }
        }
        return keyPrefix;
    }

    /** {@code prefix{hex(sha256(scope 0x00 key))}} as bytes. */
    static byte[] recordKey(byte[] prefix, IdempotencyKey key) {
        byte[] hex = key.hash().getBytes(US_ASCII);
        byte[] out = new byte[prefix.length + hex.length + 2];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        out[prefix.length] = '{';
        System.arraycopy(hex, 0, out, prefix.length + 1, hex.length);
        out[out.length - 1] = '}';
        return out;
    }
}
