package io.retrysafe.spi;

import io.retrysafe.IdempotencyKey;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Where a store keeps the saved values and recovery point of phased operations, in the record of their
 * key, and how a local step's transaction writes them. Implemented by stores that can commit them
 * in the same transaction as the application's own writes (the JDBC store; a non-blocking store implements
 * {@link AsyncPhaseJournal}); a store that cannot (Redis, DynamoDB) has none, and {@code PhasedRetrySafe}
 * cannot be built on it.
 *
 * <p>The saved state is opaque bytes to the journal. It belongs to one life of a record: a record
 * that expired and was claimed anew has none, whatever an earlier life saved.
 *
 * @param <C> what a local step is given to reach its transaction
 */
public interface PhaseJournal<C> {

    /** The saved state of the key, if {@code token} holds it and a local step saved some in this life of the record. */
    Optional<byte[]> read(IdempotencyKey key, OwnerToken token);

    /**
     * Runs {@code work} in one transaction, then, in the same transaction, saves the state it returns and
     * sets the lease to {@code leaseTtl} from now, if {@code token} still holds the key (in progress, not
     * expired); commits then. {@link FencedWrite.LeaseLost} if it does not: the transaction is rolled back,
     * the work's writes with it. A failure of {@code work} rolls back and is thrown as it is.
     */
    FencedWrite advance(IdempotencyKey key, OwnerToken token, Duration leaseTtl, StepWork<C> work) throws Exception;

    /**
     * Up to {@code limit} operations with saved state that nobody holds (released, or their lease
     * ended) and that nobody touched for {@code idleFor}: the completer's work, oldest first.
     */
    List<Abandoned> abandoned(Duration idleFor, int limit);

    /** How many operations {@link #abandoned} would find without a limit: the completer's backlog. */
    long countAbandoned(Duration idleFor);

    /**
     * Runs {@code work} if no other instance runs work under {@code name} on this store now; empty if one
     * does. The lock ends with the work.
     */
    <R> Optional<R> exclusively(String name, Supplier<R> work);

    /** A short name for logs and errors. */
    default String name() {
        return getClass().getSimpleName();
    }

    /** A local step's body: runs in the transaction, and returns the state to save with it. */
    @FunctionalInterface
    interface StepWork<C> {
        byte[] run(C transaction) throws Exception;
    }

    /** An operation left mid-way: its key and its request's fingerprint, which a takeover must match. */
    record Abandoned(IdempotencyKey key, io.retrysafe.Fingerprint fingerprint) {
    }
}
