package io.retrysafe;

import io.retrysafe.spi.PhaseJournal;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Drives phased operations that nobody retried to their end. An operation is abandoned when it saved a
 * recovery point, nobody holds its key (it was released, or its owner died and the lease ran out), and
 * nothing touched it for {@link Builder#idleFor}. The completer takes each such key over, as a retry
 * would, and runs the operation from its saved input and steps: forward; if that fails and the operation
 * declares a compensating end, that instead. A compensation that committed a local step and then stopped is
 * resumed as such, never by going forward again. The answer is stored for the key, so a late retry replays
 * it. An operation that fails both ways is released and found again on a later run.
 *
 * <p>One runner at a time across every instance ({@link PhaseJournal#exclusively}); call {@link #runOnce}
 * on a schedule. Each run is reported to the engine's listener ({@link io.retrysafe.spi.RetrySafeListener#onCompleterRun}).
 */
public final class PhaseCompleter<C> {
    private static final System.Logger LOG = System.getLogger(PhaseCompleter.class.getName());
    /** How long an operation nobody holds stays untouched before the completer takes it over. */
    public static final Duration DEFAULT_IDLE_FOR = Duration.ofMinutes(5);
    /** Operations taken over per run, at most. */
    public static final int DEFAULT_BATCH_SIZE = 100;
    /** The lock both faces' completers take, so that one runs at a time across every instance. */
    static final String LOCK = "retrysafe_completer";

    private final PhasedRetrySafe<C> phased;
    private final RetrySafe engine;
    private final Map<String, PhasedOperation<?, ?, C>> operations;
    private final Duration idleFor;
    private final int batchSize;

    private PhaseCompleter(Builder<C> b) {
        this.phased = b.phased;
        this.engine = b.phased.engine().with(completerPolicy(b.phased.engine().policy()));
        this.operations = b.operations();
        this.idleFor = b.idleForOrDefault();
        this.batchSize = b.batchSizeOrDefault();
    }

    /** A key somebody holds now is not abandoned: the completer goes on at once instead of waiting for it. */
    static OperationPolicy completerPolicy(OperationPolicy policy) {
        return OperationPolicy.from(policy).waitForResult(Duration.ZERO).build();
    }

    /** The names of the operations it may find. */
    public java.util.Set<String> operations() {
        return operations.keySet();
    }

    public Duration idleFor() {
        return idleFor;
    }

    public int batchSize() {
        return batchSize;
    }

    /** How many operations are abandoned now: the backlog a run would work through. */
    public long backlog() {
        return phased.journal().countAbandoned(idleFor);
    }

    /**
     * One run: up to {@link #batchSize()} abandoned operations driven to their end, unless another instance
     * is running the completer now ({@link Run#ran()} false then).
     */
    public Run runOnce() {
        long start = System.nanoTime();
        return report(engine.name(), engine.listener(), phased.journal().exclusively(LOCK, this::drive), start);
    }

    /** A run's end, as both faces report it: timed, to the engine's listener, and logged when it found any. */
    static Run report(String engine, RetrySafeListener listener, Optional<Run> ran, long start) {
        Run timed = ran.orElseGet(() -> new Run(false, 0, 0, 0, 0, 0, 0)).took(Duration.ofNanos(System.nanoTime() - start));
        listener.onCompleterRun(timed);
        if (timed.found() > 0) {
            LOG.log(Level.INFO, () -> "[" + engine + "] completer: " + timed);
        }
        return timed;
    }

    private Run drive() {
        List<PhaseJournal.Abandoned> found = phased.journal().abandoned(idleFor, batchSize);
        Tally tally = new Tally(engine.name());
        for (PhaseJournal.Abandoned abandoned : found) {
            boolean[] compensated = {false};
            try {
                tally.ended(engine.executeHeld(abandoned.key(), abandoned.fingerprint(), ResponseCodec.identity(),
                        (attempt, token) -> {
                            PhaseState saved = PhaseRun.saved(phased, abandoned.key(), token, attempt);
                            PhasedOperation<?, ?, C> operation = operationOf(operations, abandoned.key(), saved);
                            return end(operation, PhaseRun.resume(phased, abandoned.key(), token, attempt, saved),
                                    compensated);
                        }), compensated[0]);
            } catch (RuntimeException e) {
                tally.failed(abandoned.key(), e);
            }
        }
        return tally.run(found.size());
    }

    /**
     * The registered operation whose steps {@code saved} holds.
     *
     * @throws IllegalStateException if there are none now, or their operation is not registered
     */
    static <O> O operationOf(Map<String, O> operations, IdempotencyKey key, PhaseState saved) {
        if (saved == null) {
            // Expired and claimed anew since it was listed: nothing of it is left to drive.
            throw new IllegalStateException("key " + key.digest() + " has no saved steps now");
        }
        O operation = operations.get(saved.operation);
        if (operation == null) {
            throw new IllegalStateException("operation " + saved.operation + " of key " + key.digest()
                    + " is not registered with the completer");
        }
        return operation;
    }

    /** How the operations of one run ended. */
    static final class Tally {
        private final String engine;
        private int forwarded;
        private int compensated;
        private int failed;
        private int taken;

        Tally(String engine) {
            this.engine = engine;
        }

        /** The completer's execute of one operation answered {@code outcome}, from its compensation or not. */
        void ended(Outcome<StoredResponse> outcome, boolean byCompensation) {
            if (outcome instanceof Outcome.Executed<StoredResponse> executed
                    && executed.completion() == Outcome.Completion.STORED) {
                if (byCompensation) {
                    compensated++;
                } else {
                    forwarded++;
                }
            } else if (outcome instanceof Outcome.Executed<StoredResponse> released) {
                failed++;
                LOG.log(Level.WARNING, () -> "[" + engine + "] completer: the operation's answer "
                        + released.value().status() + " is one the outcome policy releases, not stores; it is taken "
                        + "over again on a later run. End operations the completer drives with an answer that is stored");
            } else {
                taken++; // a retry got there first, or holds it now
            }
        }

        void failed(IdempotencyKey key, Throwable e) {
            failed++;
            LOG.log(Level.WARNING, () -> "[" + engine + "] completer could not end the operation of key "
                    + key.digest() + "; it is tried again on a later run: " + e);
        }

        Run run(int found) {
            return new Run(true, found, forwarded, compensated, failed, taken, 0);
        }
    }

    static void compensating(String engine, String operation, Throwable forwardFailure) {
        LOG.log(Level.INFO, () -> "[" + engine + "] operation " + operation + " failed forward (" + forwardFailure
                + "); running its compensation");
    }

    private <I, T> StoredResponse end(PhasedOperation<I, T, C> operation, PhaseRun<C> run, boolean[] compensated)
            throws Exception {
        I input = operation.input().decode(run.state().input);
        T answer;
        if (run.compensationBegun()) {
            // A compensation that stopped midway is finished, never undone by going forward again.
            compensated[0] = true;
            return operation.answer().encode(run.resume(operation, input));
        }
        try {
            answer = operation.forward().run(input, run);
        } catch (OutcomeUnknownException e) {
            throw e; // another attempt holds the key now, or the step cannot know: not this run's to compensate
        } catch (Exception e) {
            if (!operation.hasCompensation()) {
                throw e;
            }
            compensating(engine.name(), operation.name(), e);
            answer = operation.compensation().run(input, run.forCompensation());
            compensated[0] = true;
        }
        return operation.answer().encode(answer);
    }

    @Override
    public String toString() {
        return "PhaseCompleter[" + engine.name() + ", operations=" + operations.keySet() + ", idleFor=" + idleFor
                + ", batchSize=" + batchSize + "]";
    }

    /**
     * What one run did. {@code ran} is false when another instance held the completer's lock; {@code taken}
     * counts operations that a retry held or ended first.
     */
    public record Run(boolean ran, int found, int forwarded, int compensated, int failed, int taken, long nanos) {

        Run took(Duration duration) {
            return new Run(ran, found, forwarded, compensated, failed, taken, duration.toNanos());
        }

        public Duration duration() {
            return Duration.ofNanos(nanos);
        }
    }

    /** Builds a {@link PhaseCompleter}; each value may be set once, each operation registered once. */
    public static final class Builder<C> extends CompleterBuilder<PhasedOperation<?, ?, C>, Builder<C>> {
        private final PhasedRetrySafe<C> phased;

        Builder(PhasedRetrySafe<C> phased) {
            this.phased = phased;
        }

        @Override
        String nameOf(PhasedOperation<?, ?, C> operation) {
            return operation.name();
        }

        public PhaseCompleter<C> build() {
            return new PhaseCompleter<>(this);
        }
    }
}
