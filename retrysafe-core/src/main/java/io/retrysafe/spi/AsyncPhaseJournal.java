package io.retrysafe.spi;

import io.retrysafe.IdempotencyKey;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * {@link PhaseJournal} for a non-blocking store (the R2DBC store): the same saved state in the key's
 * record, the same fencing and the same search, each call answered by a stage that no thread waits for.
 * A failure is a failed stage, never a throw.
 *
 * @param <C> what a local step is given to reach its transaction
 */
public interface AsyncPhaseJournal<C> {

    /** {@link PhaseJournal#read}. */
    CompletionStage<Optional<byte[]>> read(IdempotencyKey key, OwnerToken token);

    /**
     * Begins a transaction and runs {@code work} in it; once its stage completes, saves the state it
     * completed with and sets the lease to {@code leaseTtl} from now in the same transaction, if {@code token}
     * still holds the key, and commits. {@link FencedWrite.LeaseLost} if it does not: the transaction is
     * rolled back, the work's writes with it. A failure of {@code work} (thrown or its stage's) rolls back and
     * fails the returned stage as it is.
     */
    CompletionStage<FencedWrite> advance(IdempotencyKey key, OwnerToken token, Duration leaseTtl, StepWork<C> work);

    /** {@link PhaseJournal#abandoned}. */
    CompletionStage<List<PhaseJournal.Abandoned>> abandoned(Duration idleFor, int limit);

    /** {@link PhaseJournal#countAbandoned}. */
    CompletionStage<Long> countAbandoned(Duration idleFor);

    /**
     * Runs {@code work} if no other instance runs work under {@code name} on this store now, holding the
     * lock until its stage completes; empty if one does. The same lock as {@link PhaseJournal#exclusively}
     * on the same table, so that blocking and non-blocking completers exclude each other.
     */
    <R> CompletionStage<Optional<R>> exclusively(String name, Supplier<? extends CompletionStage<R>> work);

    /** A short name for logs and errors. */
    default String name() {
        return getClass().getSimpleName();
    }

    /** A local step's body: runs in the transaction, and completes with the state to save with it. */
    @FunctionalInterface
    interface StepWork<C> {
        CompletionStage<byte[]> run(C transaction) throws Exception;
    }
}
