package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.PhaseJournal;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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

    private final PhasedRetrySafe<C> phased;
    private final RetrySafe engine;
    private final Map<String, PhasedOperation<?, ?, C>> operations;
    private final Duration idleFor;
    private final int batchSize;

    private PhaseCompleter(Builder<C> b) {
        this.phased = b.phased;
        // A key somebody holds now is not abandoned: go on at once instead of waiting for it.
        this.engine = b.phased.engine().with(OperationPolicy.from(b.phased.engine().policy())
                .waitForResult(Duration.ZERO).build());
        this.operations = Map.copyOf(b.operations);
        this.idleFor = b.idleFor == null ? DEFAULT_IDLE_FOR : b.idleFor;
        this.batchSize = b.batchSize == null ? DEFAULT_BATCH_SIZE : b.batchSize;
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
        Run run = phased.journal().exclusively("retrysafe_completer", this::drive)
                .orElseGet(() -> new Run(false, 0, 0, 0, 0, 0, 0));
        Run timed = run.took(Duration.ofNanos(System.nanoTime() - start));
        engine.listener().onCompleterRun(timed);
        if (timed.found() > 0) {
            LOG.log(Level.INFO, () -> "[" + engine.name() + "] completer: " + timed);
        }
        return timed;
    }

    private Run drive() {
        List<PhaseJournal.Abandoned> found = phased.journal().abandoned(idleFor, batchSize);
        int forwarded = 0;
        int compensated = 0;
        int failed = 0;
        int taken = 0;
        for (PhaseJournal.Abandoned abandoned : found) {
            Ending[] ending = {null};
            try {
                Outcome<StoredResponse> outcome = engine.executeHeld(abandoned.key(), abandoned.fingerprint(),
                        ResponseCodec.identity(), (attempt, token) -> {
                            PhaseState saved = PhaseRun.saved(phased, abandoned.key(), token, attempt);
                            if (saved == null) {
                                // Expired and claimed anew since it was listed: nothing of it is left to drive.
                                throw new IllegalStateException("key " + abandoned.key().digest() + " has no saved steps now");
                            }
                            PhasedOperation<?, ?, C> operation = operations.get(saved.operation);
                            if (operation == null) {
                                throw new IllegalStateException("operation " + saved.operation + " of key "
                                        + abandoned.key().digest() + " is not registered with the completer");
                            }
                            return end(operation, PhaseRun.resume(phased, abandoned.key(), token, attempt, saved), ending);
                        });
                if (outcome instanceof Outcome.Executed<StoredResponse> executed
                        && executed.completion() == Outcome.Completion.STORED) {
                    if (ending[0] == Ending.COMPENSATED) {
                        compensated++;
                    } else {
                        forwarded++;
                    }
                } else if (outcome instanceof Outcome.Executed<StoredResponse>) {
                    failed++;
                } else {
                    taken++; // a retry got there first, or holds it now
                }
            } catch (RuntimeException e) {
                failed++;
                LOG.log(Level.WARNING, () -> "[" + engine.name() + "] completer could not end the operation of key "
                        + abandoned.key().digest() + "; it is tried again on a later run: " + e);
            }
        }
        return new Run(true, found.size(), forwarded, compensated, failed, taken, 0);
    }

    private enum Ending { FORWARD, COMPENSATED }

    private <I, T> StoredResponse end(PhasedOperation<I, T, C> operation, PhaseRun<C> run, Ending[] ending)
            throws Exception {
        I input = operation.input().decode(run.state().input);
        T answer;
        if (run.compensationBegun()) {
            // A compensation that stopped midway is finished, never undone by going forward again.
            answer = run.resume(operation, input);
            ending[0] = Ending.COMPENSATED;
            return operation.answer().encode(answer);
        }
        try {
            answer = operation.forward().run(input, run);
            ending[0] = Ending.FORWARD;
        } catch (OutcomeUnknownException e) {
            throw e; // another attempt holds the key now, or the step cannot know: not this run's to compensate
        } catch (Exception e) {
            if (!operation.hasCompensation()) {
                throw e;
            }
            LOG.log(Level.INFO, () -> "[" + engine.name() + "] operation " + operation.name() + " failed forward ("
                    + e + "); running its compensation");
            answer = operation.compensation().run(input, run.forCompensation());
            ending[0] = Ending.COMPENSATED;
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
    public static final class Builder<C> {
        private final PhasedRetrySafe<C> phased;
        private final Map<String, PhasedOperation<?, ?, C>> operations = new LinkedHashMap<>();
        private Duration idleFor;
        private Integer batchSize;

        Builder(PhasedRetrySafe<C> phased) {
            this.phased = phased;
        }

        /** An operation the completer may find; every phased operation of the engine belongs here. */
        public Builder<C> register(PhasedOperation<?, ?, C> operation) {
            Require.notNull(operation, "operation");
            if (operations.putIfAbsent(operation.name(), operation) != null) {
                throw new IllegalStateException("operation " + operation.name() + " was already registered");
            }
            return this;
        }

        /**
         * How long an operation nobody holds stays untouched before the completer takes it over;
         * {@link #DEFAULT_IDLE_FOR} by default. Longer than clients take to retry, so that a client that
         * comes back finds its own request still running forward.
         */
        public Builder<C> idleFor(Duration idleFor) {
            Require.unset(this.idleFor, "idleFor");
            this.idleFor = Require.notNegative(idleFor, "idleFor");
            return this;
        }

        public Builder<C> batchSize(int batchSize) {
            Require.unset(this.batchSize, "batchSize");
            this.batchSize = Require.between(batchSize, 1, 100_000, "batchSize");
            return this;
        }

        public PhaseCompleter<C> build() {
            if (operations.isEmpty()) {
                throw new IllegalStateException("a completer needs the operations it may find: register each one");
            }
            return new PhaseCompleter<>(this);
        }
    }
}
