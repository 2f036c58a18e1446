package io.retrysafe;

import io.retrysafe.spi.PhaseJournal;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

/**
 * {@link PhaseCompleter} for {@link AsyncPhasedRetrySafe}: finds the same abandoned operations, takes them
 * over one after another and drives each forward, or to its compensation, without blocking. It takes the
 * blocking completer's lock on the same table, so one runs at a time across every instance of either face.
 * Each run is reported to the engine's listener.
 */
public final class AsyncPhaseCompleter<C> {
    private final AsyncPhasedRetrySafe<C> phased;
    private final AsyncRetrySafe engine;
    private final Map<String, AsyncPhasedOperation<?, ?, C>> operations;
    private final Duration idleFor;
    private final int batchSize;

    private AsyncPhaseCompleter(Builder<C> b) {
        this.phased = b.phased;
        this.engine = b.phased.engine().with(PhaseCompleter.completerPolicy(b.phased.engine().policy()));
        this.operations = b.operations();
        this.idleFor = b.idleForOrDefault();
        this.batchSize = b.batchSizeOrDefault();
    }

    /** The names of the operations it may find. */
    public Set<String> operations() {
        return operations.keySet();
    }

    public Duration idleFor() {
        return idleFor;
    }

    public int batchSize() {
        return batchSize;
    }

    /** {@link PhaseCompleter#backlog()}. */
    public CompletionStage<Long> backlog() {
        return AsyncPhaseRun.stage(() -> phased.journal().countAbandoned(idleFor));
    }

    /** {@link PhaseCompleter#runOnce()}: the run's stage, which fails only when the store does. */
    public CompletionStage<PhaseCompleter.Run> runOnce() {
        long start = System.nanoTime();
        return AsyncPhaseRun.stage(() -> phased.journal().exclusively(PhaseCompleter.LOCK, this::drive))
                .thenApply(ran -> PhaseCompleter.report(engine.name(), engine.listener(), ran, start));
    }

    /** The operations found, each ended before the next is taken over. */
    private CompletableFuture<PhaseCompleter.Run> drive() {
        return AsyncPhaseRun.stage(() -> phased.journal().abandoned(idleFor, batchSize)).thenCompose(found -> {
            PhaseCompleter.Tally tally = new PhaseCompleter.Tally(engine.name());
            CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
            for (PhaseJournal.Abandoned abandoned : found) {
                done = done.thenCompose(previous -> takeOver(abandoned, tally));
            }
            return done.thenApply(all -> tally.run(found.size()));
        });
    }

    private CompletableFuture<Void> takeOver(PhaseJournal.Abandoned abandoned, PhaseCompleter.Tally tally) {
        boolean[] compensated = {false};
        return AsyncPhaseRun.stage(() -> engine.executeHeld(abandoned.key(), abandoned.fingerprint(),
                        ResponseCodec.identity(), (attempt, token) -> AsyncPhaseRun.saved(phased, abandoned.key(), token,
                                attempt).thenCompose(saved -> end(PhaseCompleter.operationOf(operations, abandoned.key(),
                                saved), AsyncPhaseRun.resume(phased, abandoned.key(), token, attempt, saved), compensated))))
                .handle((outcome, failure) -> {
                    if (failure != null) {
                        tally.failed(abandoned.key(), EngineCore.unwrap(failure));
                    } else {
                        tally.ended(outcome, compensated[0]);
                    }
                    return null;
                });
    }

    /** Forward; if that fails and the operation has a compensation, that instead, from the steps saved by then. */
    private <I, T> CompletableFuture<StoredResponse> end(AsyncPhasedOperation<I, T, C> operation, AsyncPhaseRun<C> run,
            boolean[] compensated) {
        return AsyncPhaseRun.stage(() -> {
            I input = operation.input().decode(run.state().input);
            if (run.compensationBegun()) {
                // A compensation that stopped midway is finished, never undone by going forward again.
                compensated[0] = true;
                return run.resume(operation, input).thenApply(answer -> operation.answer().encode(answer));
            }
            return AsyncPhaseRun.stage(() -> operation.forward().run(input, run))
                    .<CompletableFuture<T>>handle((answer, failure) -> {
                        Throwable cause = failure == null ? null : EngineCore.unwrap(failure);
                        // An unknown outcome: another attempt holds the key now, or the step cannot know.
                        if (cause == null || cause instanceof OutcomeUnknownException || !operation.hasCompensation()) {
                            return cause == null ? CompletableFuture.completedFuture(answer)
                                    : CompletableFuture.<T>failedFuture(cause);
                        }
                        PhaseCompleter.compensating(engine.name(), operation.name(), cause);
                        AsyncPhaseRun<C> again = run.forCompensation();
                        return AsyncPhaseRun.stage(() -> operation.compensation().run(input, again))
                                .thenApply(compensation -> {
                                    compensated[0] = true;
                                    return compensation;
                                });
                    })
                    .thenCompose(Function.identity())
                    .thenApply(answer -> operation.answer().encode(answer));
        });
    }

    @Override
    public String toString() {
        return "AsyncPhaseCompleter[" + engine.name() + ", operations=" + operations.keySet() + ", idleFor=" + idleFor
                + ", batchSize=" + batchSize + "]";
    }

    /** Builds an {@link AsyncPhaseCompleter}; each value may be set once, each operation registered once. */
    public static final class Builder<C> extends CompleterBuilder<AsyncPhasedOperation<?, ?, C>, Builder<C>> {
        private final AsyncPhasedRetrySafe<C> phased;

        Builder(AsyncPhasedRetrySafe<C> phased) {
            this.phased = phased;
        }

        @Override
        String nameOf(AsyncPhasedOperation<?, ?, C> operation) {
            return operation.name();
        }

        public AsyncPhaseCompleter<C> build() {
            return new AsyncPhaseCompleter<>(this);
        }
    }
}
