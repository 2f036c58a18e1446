package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import java.time.Duration;
import java.util.Objects;

/**
 * One call to {@link IdempotencyStore#tryClaim}: the key, the request's fingerprint, how long the
 * claim's lease lasts, and how long the record is kept. {@code token} is the owner token a
 * successful claim installs; the engine makes it so that it can fence a store's completion.
 */
public record ClaimRequest(IdempotencyKey key, Fingerprint fingerprint, OwnerToken token, Duration leaseTtl,
        Duration retention) {

    public ClaimRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(fingerprint, "fingerprint");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(leaseTtl, "leaseTtl");
        Objects.requireNonNull(retention, "retention");
    }
}
