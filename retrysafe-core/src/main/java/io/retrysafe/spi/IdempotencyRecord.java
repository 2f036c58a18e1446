package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import java.time.Instant;
import java.util.Optional;

/**
 * A snapshot of a stored record, for operators and tests. Never used to decide anything: the
 * decision is always the store's atomic {@link IdempotencyStore#tryClaim}.
 */
public record IdempotencyRecord(IdempotencyKey key, Fingerprint fingerprint, RecordStatus status, int attempt,
        Instant createdAt, Instant leaseExpiresAt, Instant completedAt, Instant expiresAt,
        Optional<StoredResponse> response) {
}
