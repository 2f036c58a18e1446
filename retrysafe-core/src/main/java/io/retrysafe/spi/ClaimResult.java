package io.retrysafe.spi;

import io.retrysafe.StoredResponse;
import java.time.Duration;

/**
 * What one atomic claim decided. Exactly one concurrent caller for a key can receive {@link Claimed};
 * {@link Unclaimed} defers that decision to the completion.
 */
public sealed interface ClaimResult {

    /**
     * This caller now holds the key with the request's token: it was absent or expired
     * ({@code attempt == 1}), released after a failure, or its holder's lease had expired.
     */
    record Claimed(OwnerToken token, int attempt) implements ClaimResult {
    }

    /**
     * Key last: there is no record, and none was written; the caller runs the operation and its
     * completion inserts the record. Concurrent callers may all receive this: the first completion
     * to commit wins, and the others' completions answer {@link FencedWrite.Superseded}. A store
     * answers it only inside a transaction that the completion commits, so that a superseded
     * attempt's writes roll back with its record.
     */
    record Unclaimed(OwnerToken token) implements ClaimResult {
    }

    /** Completed earlier with the same fingerprint: replay this. */
    record Replay(StoredResponse response) implements ClaimResult {
    }

    /** Held by another attempt whose lease is alive for {@code leaseRemaining} more. */
    record InProgress(Duration leaseRemaining) implements ClaimResult {
    }

    /** The live record was made for a request with another fingerprint. */
    record FingerprintMismatch() implements ClaimResult {
    }
}
