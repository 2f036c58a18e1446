package io.retrysafe.spi;

/** The answer to a completion or release, which only the current holder of a key may write. */
public sealed interface FencedWrite {

    /** The write was made by the holder of the key. */
    record Committed() implements FencedWrite {
    }

    /** The token no longer holds the key (another attempt took it over, or the record expired); nothing changed. */
    record LeaseLost() implements FencedWrite {
    }

    FencedWrite COMMITTED = new Committed();
    FencedWrite LEASE_LOST = new LeaseLost();
}
