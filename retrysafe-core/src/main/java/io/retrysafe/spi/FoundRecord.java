package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Objects;

/**
 * The record a claim found for its key, as the store read it, for {@link ClaimDecision#of}. The times
 * are judged by the store's own clock ({@code expired}, {@code leaseRemaining}), never by comparing
 * the JVM's clock with stored timestamps.
 *
 * @param fingerprint the fingerprint of the request that made the record
 * @param status the record's status
 * @param expired whether the record is past its {@code expires_at}: then it counts as absent
 * @param leaseRemaining how long the holder's lease lasts from now; zero or negative once it ran out
 * @param response the stored response; present exactly when the record is {@link RecordStatus#COMPLETED}
 */
public record FoundRecord(Fingerprint fingerprint, RecordStatus status, boolean expired, Duration leaseRemaining,
        StoredResponse response) {

    public FoundRecord {
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(leaseRemaining, "leaseRemaining");
        if (status == RecordStatus.COMPLETED && response == null) {
            throw new IllegalArgumentException("a COMPLETED record has a stored response, but it was null");
        }
    }
}
