package io.retrysafe;

import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import java.security.MessageDigest;
import java.util.Arrays;

/** The SHA-256 digest of a request, stored with its key so that a key reused for another request is refused. */
public final class Fingerprint {
    public static final int LENGTH = 32;

    private final byte[] digest;

    private Fingerprint(byte[] digest) {
        this.digest = digest;
    }

    /** Wraps a digest computed elsewhere; it must be the 32 bytes of a SHA-256. */
    public static Fingerprint of(byte[] sha256) {
        Require.notNull(sha256, "sha256");
        if (sha256.length != LENGTH) {
            throw new IllegalArgumentException("a fingerprint has " + LENGTH + " bytes, but was " + sha256.length);
        }
        return new Fingerprint(sha256.clone());
    }

    public static Fingerprint ofHex(String hex) {
        return of(Hex.decode(Require.notNull(hex, "hex")));
    }

    /** SHA-256 of the given bytes: the fingerprint of a request that is not HTTP (the HTTP front doors make their own). */
    public static Fingerprint sha256(byte[] bytes) {
        return new Fingerprint(Hex.sha256().digest(Require.notNull(bytes, "bytes")));
    }

    public byte[] bytes() {
        return digest.clone();
    }

    public String hex() {
        return Hex.encode(digest);
    }

    /** Constant-time comparison: a fingerprint is compared against client-controlled input. */
    public boolean matches(Fingerprint other) {
        return other != null && MessageDigest.isEqual(digest, other.digest);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Fingerprint other && Arrays.equals(digest, other.digest);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(digest);
    }

    @Override
    public String toString() {
        return "Fingerprint[" + hex() + "]";
    }
}
