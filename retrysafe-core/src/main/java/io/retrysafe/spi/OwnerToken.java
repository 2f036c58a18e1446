package io.retrysafe.spi;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Names the attempt that holds a key. Every claim, takeover included, gets a fresh token, and a
 * completion is accepted only with the token of the current holder (fencing): an attempt that lost
 * its lease cannot overwrite the answer of the one that took over. Random rather than a counter so
 * that a record purged and claimed again never repeats a token an old attempt might still hold.
 */
public record OwnerToken(UUID value) {

    public OwnerToken {
        java.util.Objects.requireNonNull(value, "value");
    }

    /** 122 random bits; uniqueness, not secrecy, is needed, so no SecureRandom contention on the request path. */
    public static OwnerToken random() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long msb = (r.nextLong() & ~0xf000L) | 0x4000L;
        long lsb = (r.nextLong() & 0x3fffffffffffffffL) | 0x8000000000000000L;
        return new OwnerToken(new UUID(msb, lsb));
    }

    @Override
    public String toString() {
        return value.toString();
    }
}
