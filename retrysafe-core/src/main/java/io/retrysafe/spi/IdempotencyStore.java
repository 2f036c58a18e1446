package io.retrysafe.spi;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * Where records live. Every method is one atomic step of the store itself: a store never reads
 * and then writes in two steps, and judges expiry by its own clock.
 *
 * <p>Implementations must pass the contract in {@code retrysafe-store-tck}. The SPI grows through
 * default methods.
 */
public interface IdempotencyStore {

    /**
     * Atomically inserts a record for the key if it is absent or expired, or takes it over if it was
     * released or its holder's lease has expired and the fingerprint matches; otherwise reports what
     * is there. A record past its expiry is absent, whether purged or not.
     */
    ClaimResult tryClaim(ClaimRequest request);

    /**
     * Stores the response and marks the record {@code COMPLETED}, kept for {@code retention} from
     * now, if {@code token} still holds the key.
     */
    FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention);

    /** Marks the record {@code FAILED} (retryable) if {@code token} still holds the key. */
    FencedWrite release(IdempotencyKey key, OwnerToken token);

    /**
     * Whether {@link #renewLease} works on this store. Stores that cannot renew leave it false, and
     * the engine then lets a long operation's lease run out (another attempt may take it over).
     */
    default boolean canRenewLease() {
        return false;
    }

    /**
     * Extends the lease of the attempt holding the key to {@code leaseTtl} from now, if {@code token}
     * still holds it ({@code IN_PROGRESS}, not taken over, not expired): the heartbeat of an operation
     * that runs longer than its lease. {@link FencedWrite.LeaseLost} otherwise; nothing changed then.
     *
     * @throws UnsupportedOperationException if {@link #canRenewLease()} is false
     */
    default FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        throw new UnsupportedOperationException(name() + " cannot renew a lease");
    }

    /**
     * Whether each write commits on its own, so that the operation's effects stay whatever becomes of
     * its completion. False for a store bound to the operation's own transaction, where a failed
     * completion rolls the operation's writes back with it: the engine then does not retry it.
     */
    default boolean isStandalone() {
        return true;
    }

    /** The record as it is now, if present and not expired; for inspection only. */
    Optional<IdempotencyRecord> inspect(IdempotencyKey key);

    /** Deletes up to {@code limit} expired records and returns how many it deleted. */
    int purgeExpired(int limit);

    /** A short name for logs, metrics and errors. */
    default String name() {
        return getClass().getSimpleName();
    }
}
