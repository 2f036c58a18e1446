package io.retrysafe.spi;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link IdempotencyStore} for a non-blocking stack: the same records, the same atomic steps and the
 * same sealed answers, each delivered by a {@link CompletionStage}. A method returns at once, without
 * blocking the calling thread on the store, and reports a failure by failing its stage rather than by
 * throwing. The stage may complete on any thread (a driver's event loop): what the caller chains on it
 * must not block either.
 *
 * <p>Implementations must pass the asynchronous contract in {@code retrysafe-store-tck}. The SPI
 * grows through default methods.
 */
public interface AsyncIdempotencyStore {

    /** {@link IdempotencyStore#tryClaim}: one atomic insert-if-absent, takeover, or report of what is there. */
    CompletionStage<ClaimResult> tryClaim(ClaimRequest request);

    /** {@link IdempotencyStore#complete}: stores the response if {@code token} still holds the key. */
    CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention);

    /** {@link IdempotencyStore#release}: marks the record {@code FAILED} if {@code token} still holds the key. */
    CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token);

    /** Whether {@link #renewLease} works on this store. */
    default boolean canRenewLease() {
        return false;
    }

    /**
     * {@link IdempotencyStore#renewLease}: extends the holder's lease to {@code leaseTtl} from now.
     * The stage fails with {@link UnsupportedOperationException} if {@link #canRenewLease()} is false.
     */
    default CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException(name() + " cannot renew a lease"));
    }

    /** {@link IdempotencyStore#isStandalone}: false for a store bound to the operation's own transaction. */
    default boolean isStandalone() {
        return true;
    }

    /** The record as it is now, if present and not expired; for inspection only. */
    CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key);

    /** Deletes up to {@code limit} expired records; the stage holds how many it deleted. */
    CompletionStage<Integer> purgeExpired(int limit);

    /** A short name for logs, metrics and errors. */
    default String name() {
        return getClass().getSimpleName();
    }
}
