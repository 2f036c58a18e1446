package io.retrysafe.internal;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/** SHA-256 and lower-case hex, the two encodings every module needs. */
public final class Hex {
    private static final byte[] DIGITS = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    /**
     * Cloned for each digest: {@link MessageDigest#getInstance} looks the provider up again on every call. Null
     * where the platform's SHA-256 cannot be cloned.
     */
    private static final MessageDigest PROTOTYPE = prototype();

    private Hex() {
    }

    public static String encode(byte[] bytes) {
        // Bytes, not chars: the string keeps one byte per digit, and is made from half the memory.
        byte[] out = new byte[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = DIGITS[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = DIGITS[bytes[i] & 0xf];
        }
        return new String(out, StandardCharsets.ISO_8859_1);
    }

    public static byte[] decode(String hex) {
        if (hex.length() % 2 != 0) {
            throw new IllegalArgumentException("hex string must have an even length, but was " + hex.length());
        }
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = digit(hex.charAt(2 * i));
            int lo = digit(hex.charAt(2 * i + 1));
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("not a hex string: " + hex);
            }
            out[i] = (byte) ((hi << 4) | lo);
        }
        return out;
    }

    /** ASCII hex only: {@link Character#digit} would also accept other scripts' digits and full-width letters. */
    private static int digit(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    /** A new SHA-256 digest, its own to update. */
    public static MessageDigest sha256() {
        if (PROTOTYPE != null) {
            try {
                return (MessageDigest) PROTOTYPE.clone();
            } catch (CloneNotSupportedException e) {
                // As below.
            }
        }
        return newSha256();
    }

    private static MessageDigest prototype() {
        MessageDigest sha = newSha256();
        try {
            sha.clone();
            return sha;
        } catch (CloneNotSupportedException e) {
            return null;
        }
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform provides SHA-256", e);
        }
    }

    public static byte[] sha256(String text) {
        return sha256().digest(text.getBytes(StandardCharsets.UTF_8));
    }
}
