package io.retrysafe.jdbc.internal;

import io.retrysafe.spi.RecordStatus;
import java.time.Instant;

/**
 * One record as an operator's listing reads it. Carries the raw key only so that the caller can
 * make its digest; {@link #toString()} leaves the key out.
 */
public record AdminRow(String scope, String key, RecordStatus status, int attempt, Instant createdAt,
        Instant leaseExpiresAt, Instant expiresAt) {

    @Override
    public String toString() {
        return "AdminRow[scope=" + scope + ", status=" + status + ", attempt=" + attempt + ", createdAt=" + createdAt
                + ", leaseExpiresAt=" + leaseExpiresAt + ", expiresAt=" + expiresAt + "]";
    }
}
