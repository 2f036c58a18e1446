package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncPhaseJournal;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link PhasedRetrySafe} on a non-blocking engine ({@link AsyncRetrySafe}) and the {@link AsyncPhaseJournal}
 * of the same store: the same claim, saved steps, derived keys and refusals, with no thread waiting for the
 * store or for a step. The saved state is the blocking face's, so either face resumes what the other saved.
 *
 * <pre>{@code
 * AsyncPhasedRetrySafe<Connection> phased = AsyncPhasedRetrySafe.builder(retrySafe, R2dbcPhaseJournal.of(store)).build();
 * CompletionStage<Outcome<Receipt>> outcome = phased.execute(key, fingerprint, checkout, order);
 * }</pre>
 *
 * <p>Instances are immutable and thread-safe.
 *
 * @param <C> what a local step is given to reach its transaction
 */
public final class AsyncPhasedRetrySafe<C> {
    private final AsyncRetrySafe engine;
    private final AsyncPhaseJournal<C> journal;
    private final int maxSavedBytes;

    private AsyncPhasedRetrySafe(AsyncRetrySafe engine, AsyncPhaseJournal<C> journal, int maxSavedBytes) {
        this.engine = engine;
        this.journal = journal;
        this.maxSavedBytes = maxSavedBytes;
    }

    /**
     * @throws IllegalArgumentException when built, for the engines {@link PhasedRetrySafe#builder} refuses: a
     *     store bound to a transaction, or an engine that fails open
     */
    public static <C> Builder<C> builder(AsyncRetrySafe engine, AsyncPhaseJournal<C> journal) {
        return new Builder<>(engine, journal);
    }

    public AsyncRetrySafe engine() {
        return engine;
    }

    public AsyncPhaseJournal<C> journal() {
        return journal;
    }

    /** {@link PhasedRetrySafe#maxSavedBytes()}. */
    public int maxSavedBytes() {
        return maxSavedBytes;
    }

    /** The same phased engine on the engine with another policy (an operation's own lease or retention). */
    public AsyncPhasedRetrySafe<C> with(OperationPolicy policy) {
        return new AsyncPhasedRetrySafe<>(engine.with(policy), journal, maxSavedBytes);
    }

    /**
     * {@link PhasedRetrySafe#execute} without blocking: the returned stage completes with its outcomes, and
     * fails where it throws (a step's failure after the key was released, its saved steps kept for the retry;
     * an {@link OutcomeUnknownException}, the key kept in progress; saved steps of another operation).
     */
    public <I, T> CompletionStage<Outcome<T>> execute(IdempotencyKey key, Fingerprint fingerprint,
            AsyncPhasedOperation<I, T, C> operation, I input) {
        Require.notNull(operation, "operation");
        Require.notNull(input, "input");
        byte[] encodedInput;
        try {
            encodedInput = Require.notNull(operation.input().encode(input), "the encoded input");
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        return engine.executeHeld(key, fingerprint, operation.answer(), (attempt, token) ->
                AsyncPhaseRun.begin(this, key, token, attempt, operation.name(), encodedInput)
                        .thenCompose(run -> run.resume(operation, input)));
    }

    /** The completer of this engine's operations: register each one, then run it on a schedule. */
    public AsyncPhaseCompleter.Builder<C> completer() {
        return new AsyncPhaseCompleter.Builder<>(this);
    }

    @Override
    public String toString() {
        return "AsyncPhasedRetrySafe[" + engine + ", journal=" + journal.name() + ", maxSavedBytes=" + maxSavedBytes
                + "]";
    }

    /** Builds an {@link AsyncPhasedRetrySafe}; each value may be set once. */
    public static final class Builder<C> {
        private final AsyncRetrySafe engine;
        private final AsyncPhaseJournal<C> journal;
        private Integer maxSavedBytes;

        private Builder(AsyncRetrySafe engine, AsyncPhaseJournal<C> journal) {
            this.engine = Require.notNull(engine, "engine");
            this.journal = Require.notNull(journal, "journal");
        }

        /** {@link PhasedRetrySafe.Builder#maxSavedBytes}, the same default and range. */
        public Builder<C> maxSavedBytes(int maxSavedBytes) {
            Require.unset(this.maxSavedBytes, "maxSavedBytes");
            this.maxSavedBytes = PhasedRetrySafe.checkMaxSavedBytes(maxSavedBytes);
            return this;
        }

        public AsyncPhasedRetrySafe<C> build() {
            PhasedRetrySafe.checkEngine(engine.store().isStandalone(), engine.store().name(), engine.failOpen(),
                    engine.name());
            return new AsyncPhasedRetrySafe<>(engine, journal,
                    maxSavedBytes == null ? PhasedRetrySafe.DEFAULT_MAX_SAVED_BYTES : maxSavedBytes);
        }
    }
}
