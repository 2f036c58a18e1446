package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** One attempt's {@link AsyncPhases}: the non-blocking face, whose steps go on from the stage before them. */
final class AsyncPhaseRun<C> extends PhaseAttempt implements AsyncPhases<C> {
    private final AsyncPhasedRetrySafe<C> phased;

    private AsyncPhaseRun(AsyncPhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            PhaseState state, boolean compensation) {
        super(key, token, attempt, phased.maxSavedBytes(), state, compensation);
        this.phased = phased;
    }

    /** {@link PhaseRun#begin}, reading the saved state without blocking. */
    static <C> CompletableFuture<AsyncPhaseRun<C>> begin(AsyncPhasedRetrySafe<C> phased, IdempotencyKey key,
            OwnerToken token, Attempt attempt, String operation, byte[] input) {
        return saved(phased, key, token, attempt).thenApply(saved -> new AsyncPhaseRun<>(phased, key, token, attempt,
                startingPoint(key, saved, operation, input), false));
    }

    /** {@link PhaseRun#saved}: completes with null when there is none. */
    static <C> CompletableFuture<PhaseState> saved(AsyncPhasedRetrySafe<C> phased, IdempotencyKey key,
            OwnerToken token, Attempt attempt) {
        if (attempt.isFirst()) {
            return CompletableFuture.completedFuture(null);
        }
        return stage(() -> phased.journal().read(key, token))
                .thenApply(saved -> saved.map(PhaseState::decode).orElse(null));
    }

    /** {@link PhaseRun#resume}. */
    static <C> AsyncPhaseRun<C> resume(AsyncPhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token,
            Attempt attempt, PhaseState saved) {
        return new AsyncPhaseRun<>(phased, key, token, attempt, saved, false);
    }

    /** {@link PhaseRun#forCompensation}. */
    AsyncPhaseRun<C> forCompensation() {
        return new AsyncPhaseRun<>(phased, key(), token(), attempt(), state(), true);
    }

    /** {@link PhaseRun#resume}. */
    <I, T> CompletableFuture<T> resume(AsyncPhasedOperation<I, T, C> operation, I input) {
        if (!compensationBegun()) {
            return stage(() -> operation.forward().run(input, this));
        }
        return stage(() -> {
            mayCompensate(operation.name(), operation.hasCompensation());
            return operation.compensation().run(input, forCompensation());
        });
    }

    /** {@code call}'s stage; a throw, or no stage, is a failed one. */
    static <T> CompletableFuture<T> stage(Callable<? extends CompletionStage<T>> call) {
        try {
            return Require.notNull(call.call(), "the stage").toCompletableFuture();
        } catch (Throwable t) {
            return CompletableFuture.failedFuture(t);
        }
    }

    @Override
    public <V> CompletionStage<V> local(String step, StepCodec<V> codec, LocalStep<C, V> work) {
        byte[] saved;
        try {
            saved = take(step, codec, work);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (saved != null) {
            return stage(() -> CompletableFuture.completedFuture(codec.decode(saved)));
        }
        Object[] result = new Object[1];
        Saving[] next = new Saving[1];
        return stage(() -> phased.journal().advance(key(), token(), phased.engine().policy().leaseTtl(),
                transaction -> stage(() -> work.run(transaction)).thenApply(value -> {
                    next[0] = advancedBy(step, codec, value);
                    result[0] = value;
                    return next[0].bytes();
                })))
                .thenApply(write -> {
                    if (write instanceof FencedWrite.LeaseLost) {
                        throw leaseLost(step, phased.journal().name(), phased.engine().listener(),
                                phased.engine().policy().retryAfter());
                    }
                    committed(next[0]);
                    @SuppressWarnings("unchecked")
                    V value = (V) result[0];
                    return value;
                });
    }

    @Override
    public <V> CompletionStage<V> foreign(String step, StepCodec<V> codec, ForeignStep<V> call) {
        byte[] saved;
        try {
            saved = take(step, codec, call);
            if (saved == null) {
                mayCallOut(step);
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (saved != null) {
            return stage(() -> CompletableFuture.completedFuture(codec.decode(saved)));
        }
        return stage(() -> call.call(derivedKey(step))).thenApply(value -> {
            calledOut(step, codec, value);
            return value;
        });
    }
}
