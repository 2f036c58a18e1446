package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.PhaseJournal;

/**
 * Phased operations: work that calls another service, written as named steps that resume where they
 * stopped. Built on a standalone engine (its claim commits before the work) and the {@link PhaseJournal}
 * of the same store, which saves each local step's values and recovery point in the key's record, in
 * the step's own transaction.
 *
 * <pre>{@code
 * PhasedRetrySafe<Connection> phased = PhasedRetrySafe.builder(retrySafe, JdbcPhaseJournal.of(store)).build();
 * Outcome<Receipt> outcome = phased.execute(key, fingerprint, checkout, order);
 * }</pre>
 *
 * <p>A key claimed, released or taken over runs {@code operation} again from its recovery point: saved
 * steps hand back their values without running. What is not a step runs on every attempt, so it must
 * not change anything. Refusals, replays and the answer's storage are the engine's, as for
 * {@link RetrySafe#execute}; the {@link PhaseCompleter} drives operations nobody retried to their end.
 * Instances are immutable and thread-safe.
 *
 * @param <C> what a local step is given to reach its transaction
 */
public final class PhasedRetrySafe<C> {
    /** The bound on what one operation saves: its input, its step values and their names. */
    public static final int DEFAULT_MAX_SAVED_BYTES = 64 * 1024;

    private final RetrySafe engine;
    private final PhaseJournal<C> journal;
    private final int maxSavedBytes;

    private PhasedRetrySafe(RetrySafe engine, PhaseJournal<C> journal, int maxSavedBytes) {
        this.engine = engine;
        this.journal = journal;
        this.maxSavedBytes = maxSavedBytes;
    }

    /**
     * @throws IllegalArgumentException when built, if {@code engine}'s store is bound to a transaction (a
     *     phased operation's claim must commit before its first step) or the engine fails open (steps cannot
     *     be saved without the store)
     */
    public static <C> Builder<C> builder(RetrySafe engine, PhaseJournal<C> journal) {
        return new Builder<>(engine, journal);
    }

    public RetrySafe engine() {
        return engine;
    }

    public PhaseJournal<C> journal() {
        return journal;
    }

    /** The most bytes one operation may save with its key, its input included. */
    public int maxSavedBytes() {
        return maxSavedBytes;
    }

    /** The same phased engine on the engine with another policy (an operation's own lease or retention). */
    public PhasedRetrySafe<C> with(OperationPolicy policy) {
        return new PhasedRetrySafe<>(engine.with(policy), journal, maxSavedBytes);
    }

    /**
     * Runs {@code operation} with {@code input} once per key, resuming from the key's recovery point when
     * an earlier attempt saved one; once a local step of the operation's compensation committed (the completer
     * began it), the compensation is resumed instead of the forward path. Answers as {@link RetrySafe#execute}:
     * refusals and replays as values, an exception of a step releases the key (its saved steps stay, for the
     * retry to resume from) and
     * propagates, an {@link OutcomeUnknownException} keeps it in progress.
     *
     * @throws IllegalStateException if the key's saved steps belong to another operation
     */
    public <I, T> Outcome<T> execute(IdempotencyKey key, Fingerprint fingerprint, PhasedOperation<I, T, C> operation,
            I input) {
        Require.notNull(operation, "operation");
        Require.notNull(input, "input");
        byte[] encodedInput = Require.notNull(operation.input().encode(input), "the encoded input");
        return engine.executeHeld(key, fingerprint, operation.answer(), (attempt, token) -> {
            PhaseRun<C> run = PhaseRun.begin(this, key, token, attempt, operation.name(), encodedInput);
            return run.resume(operation, input);
        });
    }

    /** The completer of this engine's operations: register each one, then run it on a schedule. */
    public PhaseCompleter.Builder<C> completer() {
        return new PhaseCompleter.Builder<>(this);
    }

    @Override
    public String toString() {
        return "PhasedRetrySafe[" + engine + ", journal=" + journal.name() + ", maxSavedBytes=" + maxSavedBytes + "]";
    }

    /** Builds a {@link PhasedRetrySafe}; each value may be set once. */
    public static final class Builder<C> {
        private final RetrySafe engine;
        private final PhaseJournal<C> journal;
        private Integer maxSavedBytes;

        private Builder(RetrySafe engine, PhaseJournal<C> journal) {
            this.engine = Require.notNull(engine, "engine");
            this.journal = Require.notNull(journal, "journal");
        }

        /**
         * The most bytes one operation may save with its key (its input, step names and values);
         * {@value #DEFAULT_MAX_SAVED_BYTES} by default. A local step past it fails before it commits
         * ({@link PhaseStateTooLargeException}).
         */
        public Builder<C> maxSavedBytes(int maxSavedBytes) {
            Require.unset(this.maxSavedBytes, "maxSavedBytes");
            this.maxSavedBytes = checkMaxSavedBytes(maxSavedBytes);
            return this;
        }

        public PhasedRetrySafe<C> build() {
            checkEngine(engine.store().isStandalone(), engine.store().name(), engine.failOpen(), engine.name());
            return new PhasedRetrySafe<>(engine, journal, maxSavedBytes == null ? DEFAULT_MAX_SAVED_BYTES : maxSavedBytes);
        }
    }

    static int checkMaxSavedBytes(int maxSavedBytes) {
        return Require.between(maxSavedBytes, 256, 16 * 1024 * 1024, "maxSavedBytes");
    }

    /** The refusals of either face's builder: what an engine must be for phased operations. */
    static void checkEngine(boolean standalone, String store, boolean failOpen, String engine) {
        if (!standalone) {
            throw new IllegalArgumentException("phased operations need a standalone engine, whose claim commits "
                    + "before the first step; store " + store + " is bound to a transaction");
        }
        if (failOpen) {
            throw new IllegalArgumentException("phased operations cannot fail open: without the store, no step "
                    + "could be saved or resumed; engine " + engine + " fails open");
        }
    }
}
