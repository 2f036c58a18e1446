package io.retrysafe;

import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The engine on a non-blocking store ({@link AsyncIdempotencyStore}): the same decisions as
 * {@link RetrySafe}, claim → run → complete, replay, refusal, fencing, outcome policy, listener
 * events, made without any thread waiting for the store. Each store call's stage is chained to the
 * next step; a wait for a key another attempt holds, and the pause before writing an outcome again,
 * are scheduled on a shared timer instead of sleeping. The operation's own stage may complete on any
 * thread; the outcome is written from there.
 *
 * <pre>{@code
 * AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(r2dbcStore).build();
 * CompletionStage<Outcome<String>> outcome = retrySafe.execute(key, fingerprint, ResponseCodec.utf8(),
 *         attempt -> payments.charge(request));   // a CompletionStage<String>
 * }</pre>
 *
 * <p>The returned stage completes with every outcome {@link RetrySafe#execute} returns, refusals
 * included; it fails where that method throws (a failed operation, after its key was released; an
 * outcome that could not be recorded; a stored response that cannot be opened). Instances are
 * immutable and thread-safe.
 */
public final class AsyncRetrySafe {
    private final EngineCore core;
    private final AsyncIdempotencyStore store;
    private final InFlightKeys inFlight;

    AsyncRetrySafe(EngineCore core, AsyncIdempotencyStore store, InFlightKeys inFlight) {
        this.core = core;
        this.store = store;
        this.inFlight = inFlight;
    }

    public static Builder builder(AsyncIdempotencyStore store) {
        return new Builder(store);
    }

    /** The same engine with another policy, for an operation that needs its own retention or outcome policy. */
    public AsyncRetrySafe with(OperationPolicy policy) {
        return new AsyncRetrySafe(core.with(Require.notNull(policy, "policy")), store, inFlight);
    }

    /** The same engine on another store; a transactional mode binds one per transaction. */
    public AsyncRetrySafe withStore(AsyncIdempotencyStore store) {
        Require.notNull(store, "store");
        return new AsyncRetrySafe(core.withStore(store.name()), store, inFlight);
    }

    /** The same engine reporting to {@code listener} instead (guarded as the builder guards it). */
    public AsyncRetrySafe withListener(RetrySafeListener listener) {
        return new AsyncRetrySafe(core.withListener(Require.notNull(listener, "listener")), store, inFlight);
    }

    public String name() {
        return core.name;
    }

    public OperationPolicy policy() {
        return core.policy;
    }

    public AsyncIdempotencyStore store() {
        return store;
    }

    public boolean failOpen() {
        return core.failOpen;
    }

    /** The engine's listener, guarded. */
    public RetrySafeListener listener() {
        return core.listener;
    }

    /**
     * The keys in flight on this instance: one registry, shared by every copy of this engine (and, for an
     * engine made by {@link RetrySafe#withAsyncStore}, with the blocking engine that made it).
     */
    InFlightKeys inFlight() {
        return inFlight;
    }

    /**
     * {@link RetrySafe#oncePerInstance} without blocking: runs {@code work} (this engine's
     * {@link #execute}, or a transactional mode's, with the connection it takes) as the only request of
     * {@code key} in flight on this instance. A duplicate with the same fingerprint chains on the end of
     * the request in flight, without a connection or a store call, for up to {@code wait}, then goes on
     * to the store (which replays), or is answered in progress; another request of the key goes on to
     * the store, which decides. The key is freed when {@code work}'s stage completes, however it does;
     * cancelling the returned stage does not end the work, and a duplicate whose stage is cancelled while
     * it waits stops waiting and never runs {@code work}.
     */
    public <T> CompletionStage<Outcome<T>> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, Duration wait,
            Supplier<? extends CompletionStage<Outcome<T>>> work) {
        Require.notNull(work, "work");
        CompletableFuture<Outcome<T>> result = new CompletableFuture<>();
        CompletableFuture<InFlightKeys.Admission> admitted = inFlight.admitAsync(key, fingerprint, wait);
        result.whenComplete((outcome, failure) -> admitted.cancel(false));
        admitted.thenAccept(admission -> {
            if (result.isDone()) {
                admission.close();
            } else if (admission instanceof InFlightKeys.Admission.Busy) {
                Outcome<T> busy = core.inProgress();
                result.complete(core.finished(key, busy));
            } else {
                CompletableFuture<Outcome<T>> stage;
                try {
                    stage = Require.notNull(work.get(), "the work's stage").toCompletableFuture();
                } catch (Throwable t) {
                    admission.close();
                    result.completeExceptionally(t);
                    return;
                }
                stage.whenComplete((outcome, failure) -> {
                    EngineCore.markAnswered(admission, outcome);
                    admission.close();
                    if (failure != null) {
                        result.completeExceptionally(EngineCore.unwrap(failure));
                    } else {
                        result.complete(outcome);
                    }
                });
            }
        });
        return result;
    }

    /**
     * Runs {@code operation}, whose work finishes when its stage does, at most once per key. Nothing
     * here blocks: the returned stage completes once the key is decided and, for an attempt that ran,
     * once its outcome is recorded. An operation that throws or whose stage fails releases the key,
     * and the returned stage fails with that failure (a checked one wrapped in
     * {@link OperationFailedException}), except an {@link OutcomeUnknownException}: the operation does not
     * know whether its effect happened, and the key stays in progress until its lease ends.
     */
    public <T> CompletionStage<Outcome<T>> execute(IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<? extends CompletionStage<T>> operation) {
        Require.notNull(operation, "operation");
        return executeHeld(key, fingerprint, codec, (attempt, token) -> operation.run(attempt));
    }

    /** {@link #execute}, telling the operation its owner token, as {@link RetrySafe#executeHeld} does. */
    <T> CompletionStage<Outcome<T>> executeHeld(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec,
            RetrySafe.HeldOperation<? extends CompletionStage<T>> operation) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(codec, "codec");
        Require.notNull(operation, "operation");
        return claim(key, fingerprint, codec, operation, core.startWait()).thenApply(o -> core.finished(key, o));
    }

    private <T> CompletableFuture<Outcome<T>> claim(IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, RetrySafe.HeldOperation<? extends CompletionStage<T>> operation, EngineCore.Wait wait) {
        ClaimRequest request = core.claimRequest(key, fingerprint);
        return timed("claim", () -> store.tryClaim(request))
                .handle((claim, failure) -> failure != null
                        ? core.<T>claimFailed(key, EngineCore.asRuntime(EngineCore.unwrap(failure)))
                        : core.decide(key, claim, codec, wait))
                .thenCompose(step -> {
                    if (step instanceof EngineCore.Step.ClaimAgain<T> again) {
                        return EngineCore.after(again.pauseNanos())
                                .thenCompose(ignored -> claim(key, fingerprint, codec, operation, wait));
                    } else if (step instanceof EngineCore.Step.Run<T> run) {
                        return run(key, codec, operation, run.claimed());
                    } else if (step instanceof EngineCore.Step.Unprotected<T> unprotected) {
                        return unprotected(key, operation, unprotected.storeFailure());
                    }
                    return CompletableFuture.completedFuture(((EngineCore.Step.Answer<T>) step).outcome());
                });
    }

    private <T> CompletableFuture<Outcome<T>> run(IdempotencyKey key, ResponseCodec<T> codec,
            RetrySafe.HeldOperation<? extends CompletionStage<T>> operation, ClaimResult.Claimed claimed) {
        Attempt attempt = core.begin(key, claimed);
        // Renewed until the outcome is written, by beats that start a renewal and do not wait for it.
        LeaseRenewal renewal = core.renewLease(store.isStandalone(), store.canRenewLease(), key, claimed,
                () -> timed("renew lease", () -> store.renewLease(key, claimed.token(), core.policy.leaseTtl())));
        CompletionStage<T> stage;
        try {
            stage = Require.notNull(operation.run(attempt, claimed.token()), "the operation's stage");
        } catch (Throwable t) {
            renewal.close();
            return operationFailed(key, claimed, t);
        }
        return stage.toCompletableFuture().handle((value, failure) -> failure != null
                        ? this.<T>operationFailed(key, claimed, EngineCore.unwrap(failure))
                        : record(key, claimed, attempt, codec, value))
                .thenCompose(Function.identity())
                .whenComplete((outcome, failure) -> renewal.close());
    }

    /** Stores the operation's result, or releases the key, per the outcome policy, fenced by the claim's token. */
    private <T> CompletableFuture<Outcome<T>> record(IdempotencyKey key, ClaimResult.Claimed claimed, Attempt attempt,
            ResponseCodec<T> codec, T value) {
        EngineCore.Recording recording;
        try {
            recording = core.prepare(key, codec, value);
        } catch (Throwable t) {
            return failAfterRelease(key, claimed, t);
        }
        return writeOutcome(key, claimed, recording, 1)
                .thenApply(write -> core.recorded(key, attempt, codec, value, recording, write));
    }

    /** Completes (or releases) the key; a failed write is written again after a scheduled pause, as {@link EngineCore#pauseBeforeWritingAgain} says. */
    private CompletableFuture<FencedWrite> writeOutcome(IdempotencyKey key, ClaimResult.Claimed claimed,
            EngineCore.Recording recording, int n) {
        return timed(recording.store() ? "complete" : "release", () -> recording.store()
                        ? store.complete(key, claimed.token(), recording.sealed(), core.policy.retention())
                        : store.release(key, claimed.token()))
                .handle((write, failure) -> {
                    if (failure == null) {
                        return CompletableFuture.completedFuture(write);
                    }
                    long pause = core.pauseBeforeWritingAgain(store.isStandalone(), key, n, EngineCore.asRuntime(EngineCore.unwrap(failure)));
                    return EngineCore.after(pause).thenCompose(ignored -> writeOutcome(key, claimed, recording, n + 1));
                })
                .thenCompose(Function.identity());
    }

    /**
     * The operation failed: releases its key, unless {@link EngineCore#keepsKeyAfter} says the failure keeps
     * it in progress, then fails with that failure.
     */
    private <T> CompletableFuture<Outcome<T>> operationFailed(IdempotencyKey key, ClaimResult.Claimed claimed,
            Throwable failure) {
        return core.keepsKeyAfter(key, failure)
                ? CompletableFuture.failedFuture(EngineCore.propagate(failure))
                : failAfterRelease(key, claimed, failure);
    }

    /** Releases the key after the attempt failed, then fails with that failure: the caller sees a key already freed. */
    private <T> CompletableFuture<Outcome<T>> failAfterRelease(IdempotencyKey key, ClaimResult.Claimed claimed,
            Throwable failure) {
        return timed("release", () -> store.release(key, claimed.token()))
                .handle((released, releaseFailure) -> {
                    if (releaseFailure != null) {
                        core.releaseFailed(key, EngineCore.asRuntime(EngineCore.unwrap(releaseFailure)));
                    }
                    throw EngineCore.propagate(failure);
                });
    }

    private <T> CompletableFuture<Outcome<T>> unprotected(IdempotencyKey key,
            RetrySafe.HeldOperation<? extends CompletionStage<T>> operation, RuntimeException storeFailure) {
        try {
            return Require.notNull(operation.run(new Attempt(key, 1), null), "the operation's stage").toCompletableFuture()
                    .thenApply(value -> new Outcome.Unprotected<>(value, storeFailure));
        } catch (Throwable t) {
            return CompletableFuture.failedFuture(EngineCore.propagate(t));
        }
    }

    /** One store call, reported to the listener when its stage completes; a call that throws is a failed stage. */
    private <R> CompletableFuture<R> timed(String operation, Supplier<CompletionStage<R>> call) {
        long start = System.nanoTime();
        CompletableFuture<R> stage;
        try {
            stage = Require.notNull(call.get(), "the store's stage").toCompletableFuture();
        } catch (RuntimeException e) {
            stage = CompletableFuture.failedFuture(e);
        }
        return stage.whenComplete((result, failure) -> core.storeCallEnded(operation, start, failure));
    }

    @Override
    public String toString() {
        return "AsyncRetrySafe[name=" + core.name + ", store=" + store.name() + ", " + core.policy + ", failOpen="
                + core.failOpen + "]";
    }

    /** Builds an {@link AsyncRetrySafe}; each value may be set once. */
    public static final class Builder extends EngineBuilder<Builder> {
        private final AsyncIdempotencyStore store;

        private Builder(AsyncIdempotencyStore store) {
            this.store = Require.notNull(store, "store");
        }

        public AsyncRetrySafe build() {
            return new AsyncRetrySafe(core(store.name()), store, new InFlightKeys(EngineCore.TIMER));
        }
    }
}
