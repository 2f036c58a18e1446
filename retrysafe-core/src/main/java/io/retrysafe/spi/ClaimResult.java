package io.retrysafe.spi;

import io.retrysafe.StoredResponse;
import java.time.Duration;

/** What one atomic claim decided. Exactly one concurrent caller for a key can receive {@link Claimed}. */
public sealed interface ClaimResult {

    /**
     * This caller now holds the key with the request's token: it was absent or expired
     * ({@code attempt == 1}), released after a failure, or its holder's lease had expired.
     */
    record Claimed(OwnerToken token, int attempt) implements ClaimResult {
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
