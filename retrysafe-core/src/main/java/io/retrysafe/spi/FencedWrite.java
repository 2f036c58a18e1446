package io.retrysafe.spi;

/** The answer to a completion or release, which only the current holder of a key may write. */
public sealed interface FencedWrite {

    /** The write was made by the holder of the key. */
    record Committed() implements FencedWrite {
    }

    /** The token no longer holds the key (another attempt took it over, or the record expired); nothing changed. */
    record LeaseLost() implements FencedWrite {
    }

    /**
     * Key last ({@link ClaimResult.Unclaimed}): another attempt's record committed first. This
     * attempt's transaction was rolled back, its writes with it, and {@code decided} is what the
     * key holds now: a {@link ClaimResult.Replay}, a {@link ClaimResult.FingerprintMismatch}, or a
     * {@link ClaimResult.InProgress} when the other attempt had not finished within the lock bound.
     * A release may answer it too, where nothing read the key before the operation: the caller gets
     * the replay or the mismatch, not the operation's failure or unkept answer.
     */
    record Superseded(ClaimResult decided) implements FencedWrite {
        public Superseded {
            if (!(decided instanceof ClaimResult.Replay || decided instanceof ClaimResult.FingerprintMismatch
                    || decided instanceof ClaimResult.InProgress)) {
                throw new IllegalArgumentException("a superseded write is decided by a replay, a mismatch or an "
                        + "attempt in progress, not " + decided);
            }
        }
    }

    FencedWrite COMMITTED = new Committed();
    FencedWrite LEASE_LOST = new LeaseLost();
}
