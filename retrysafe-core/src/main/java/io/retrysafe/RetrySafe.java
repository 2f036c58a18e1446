package io.retrysafe;

import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;

/**
 * The engine: one store call decides, atomically, whether this attempt runs the operation, replays
 * an earlier answer, or is refused.
 *
 * <pre>{@code
 * RetrySafe retrySafe = RetrySafe.builder(new InMemoryIdempotencyStore()).build();
 * Outcome<String> outcome = retrySafe.execute(
 *         IdempotencyKey.of("user-42:payments", idempotencyKeyHeader),
 *         Fingerprint.sha256(requestBody),
 *         ResponseCodec.utf8(),
 *         attempt -> payments.charge(request));
 * String receipt = outcome.orThrow();
 * }</pre>
 *
 * <p>Claim → run → complete: a claimed key runs the operation, then its result is stored (or the key
 * released, per {@link OutcomePolicy}) fenced by the claim's owner token. A key already completed is
 * replayed; one in flight is refused or waited for; one used with another fingerprint is refused.
 * Instances are immutable and thread-safe.
 */
public final class RetrySafe {
    public static final String DEFAULT_NAME = "retrysafe";
    public static final boolean DEFAULT_FAIL_OPEN = false;
    /** Writes of an outcome in standalone mode, the first included, before it is answered as unknown. */
    public static final int DEFAULT_COMPLETION_ATTEMPTS = 4;
    /** The first pause between those writes; doubled after each (so at most 0.7 s of pauses by default). */
    public static final Duration DEFAULT_COMPLETION_BACKOFF = Duration.ofMillis(100);

    private final EngineCore core;
    private final IdempotencyStore store;
    private final InFlightKeys inFlight;

    private RetrySafe(EngineCore core, IdempotencyStore store, InFlightKeys inFlight) {
        this.core = core;
        this.store = store;
        this.inFlight = inFlight;
    }

    public static Builder builder(IdempotencyStore store) {
        return new Builder(store);
    }

    /** The same engine with another policy, for an operation that needs its own retention or outcome policy. */
    public RetrySafe with(OperationPolicy policy) {
        return new RetrySafe(core.with(Require.notNull(policy, "policy")), store, inFlight);
    }

    /** The same engine on another store; transactional stores bind one per transaction. */
    public RetrySafe withStore(IdempotencyStore store) {
        Require.notNull(store, "store");
        return new RetrySafe(core.withStore(store.name()), store, inFlight);
    }

    /**
     * The same engine reporting to {@code listener} instead (guarded as the builder guards it): for
     * an adapter that holds back the outcome until it knows whether its own transaction committed.
     */
    public RetrySafe withListener(RetrySafeListener listener) {
        return new RetrySafe(core.withListener(Require.notNull(listener, "listener")), store, inFlight);
    }

    /**
     * This engine's settings (name, policy, listener, fail-open, completion writes) on a non-blocking
     * store: the asynchronous engine, deciding exactly as this one does, and sharing this engine's keys in
     * flight on this instance, so that a duplicate of a request in flight on either waits for it.
     */
    public AsyncRetrySafe withAsyncStore(AsyncIdempotencyStore store) {
        Require.notNull(store, "store");
        return new AsyncRetrySafe(core.withStore(store.name()), store, inFlight);
    }

    public String name() {
        return core.name;
    }

    public OperationPolicy policy() {
        return core.policy;
    }

    public IdempotencyStore store() {
        return store;
    }

    public boolean failOpen() {
        return core.failOpen;
    }

    /** The engine's listener, guarded: adapters report what they refuse before the engine (bad keys) through it. */
    public RetrySafeListener listener() {
        return core.listener;
    }

    /** The keys in flight on this instance: one registry, shared by every copy of this engine. */
    InFlightKeys inFlight() {
        return inFlight;
    }

    /**
     * Runs {@code work} (this engine's {@link #execute}, or a transactional mode's, with the connection
     * it takes) as the only request of {@code key} in flight on this instance. A duplicate with the
     * same fingerprint waits here, without a connection, up to {@code wait} for it to end, then goes
     * on to the store (which replays), or is answered in progress; another request of the key goes on
     * to the store, which decides. Once {@code work} has ended with its answer stored (or replayed),
     * its duplicates go on to the store together; otherwise one at a time. Call it before taking a
     * connection or touching the store, with {@code work} ending after its transaction commits; the key
     * is freed however {@code work} ends.
     */
    public <T> Outcome<T> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, Duration wait,
            Supplier<Outcome<T>> work) {
        return oncePerInstance(key, fingerprint, wait, null, work);
    }

    /**
     * {@link #oncePerInstance(IdempotencyKey, Fingerprint, Duration, Supplier)} for {@code work} that runs this
     * engine's {@link #execute} with {@code codec}: a duplicate that waited for a request whose answer was stored
     * is given that answer in memory, as the store would replay it (encoded, sealed and opened by this engine's
     * policy, then decoded with {@code codec}), without a store call or a connection. A completed record does not
     * change until it is purged, so this is the answer the store would give. Requests of one key share the
     * answer only when they share {@code codec} (the same instance).
     */
    public <T> Outcome<T> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, Duration wait,
            ResponseCodec<T> codec, Supplier<Outcome<T>> work) {
        Require.notNull(work, "work");
        try (InFlightKeys.Admission admission = inFlight.admit(key, fingerprint, wait)) {
            if (admission instanceof InFlightKeys.Admission.Busy) {
                Outcome<T> busy = core.inProgress();
                return core.finished(key, busy);
            }
            if (admission instanceof InFlightKeys.Admission.Answered answered) {
                Outcome<T> replayed = core.replayHeld(key, answered.answer(), codec);
                if (replayed != null) {
                    return core.finished(key, replayed);
                }
            }
            Outcome<T> outcome = work.get();
            EngineCore.markAnswered(admission, outcome, codec);
            return outcome;
        }
    }

    /**
     * Runs {@code operation} at most once per key. Refusals are returned as
     * values; an exception thrown by the operation releases the key and propagates (a checked one
     * wrapped in {@link OperationFailedException}), except an {@link OutcomeUnknownException}: the operation
     * does not know whether its effect happened, and the key stays in progress until its lease ends. On a store that writes the key last
     * ({@link ClaimResult.Unclaimed}), concurrent duplicates may each run it inside their
     * transactions, and all but the first to commit are rolled back and answered as replays.
     *
     * @throws StoreUnavailableException if the operation ran but its outcome could not be recorded: in a
     *     transaction (its writes were rolled back with it), or, as {@link OutcomeUnknownException}, in
     *     standalone mode after the engine tried again (its effects may have happened)
     * @throws StoredResponseUnreadableException if the key completed earlier, but the policy's
     *     {@link StoredResponseProtection} cannot open its stored response (the operation is not run again)
     */
    public <T> Outcome<T> execute(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec,
            Operation<T> operation) {
        Require.notNull(operation, "operation");
        return executeHeld(key, fingerprint, codec, (attempt, token) -> operation.run(attempt));
    }

    /** An operation that is also told the owner token its attempt holds the key with (a phased operation's steps are fenced by it). */
    @FunctionalInterface
    interface HeldOperation<T> {
        /** {@code token} is null when the engine fails open and runs the operation without a key. */
        T run(Attempt attempt, OwnerToken token) throws Exception;
    }

    /** {@link #execute}, telling the operation its owner token. */
    <T> Outcome<T> executeHeld(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec,
            HeldOperation<T> operation) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(codec, "codec");
        Require.notNull(operation, "operation");
        Outcome<T> outcome = decide(key, fingerprint, codec, new Verdict<T, Outcome<T>>() {
            @Override
            public Outcome<T> run(ClaimResult.Claimed claimed) {
                Attempt attempt = core.begin(key, claimed);
                try (LeaseRenewal renewal = renewLease(key, claimed)) {
                    T value;
                    try {
                        value = operation.run(attempt, claimed.token());
                    } catch (Throwable t) {
                        if (releaseUnlessUnknown(key, claimed, t) instanceof FencedWrite.Superseded superseded) {
                            return core.superseded(key, codec, superseded);
                        }
                        throw EngineCore.propagate(t);
                    }
                    return record(key, claimed, attempt, codec, value);
                }
            }

            @Override
            public Outcome<T> answer(Outcome<T> outcome) {
                return outcome;
            }

            @Override
            public Outcome<T> unprotected(RuntimeException storeFailure) {
                try {
                    return new Outcome.Unprotected<>(operation.run(new Attempt(key, 1), null), storeFailure);
                } catch (Throwable t) {
                    throw EngineCore.propagate(t);
                }
            }
        });
        return core.finished(key, outcome);
    }

    /**
     * {@link #execute} for an operation that finishes later, on another thread (an asynchronous
     * request handler): the key is claimed now, and the outcome is stored, or the key released, when
     * the operation's stage completes, on the thread that completes it. A stage that fails releases the
     * key, and the returned stage fails with that failure (a checked one wrapped in
     * {@link OperationFailedException}, a failed record in {@link StoreUnavailableException}). Refusals
     * and replays are returned already completed.
     */
    public <T> CompletionStage<Outcome<T>> executeAsync(IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<? extends CompletionStage<T>> operation) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(codec, "codec");
        Require.notNull(operation, "operation");
        CompletionStage<Outcome<T>> outcome = decide(key, fingerprint, codec, new Verdict<T, CompletionStage<Outcome<T>>>() {
            @Override
            public CompletionStage<Outcome<T>> run(ClaimResult.Claimed claimed) {
                Attempt attempt = core.begin(key, claimed);
                // Renewed until the outcome is written, on whichever thread completes the stage.
                LeaseRenewal renewal = renewLease(key, claimed);
                CompletionStage<T> stage;
                try {
                    stage = Require.notNull(operation.run(attempt), "the operation's stage");
                } catch (Throwable t) {
                    renewal.close();
                    if (releaseUnlessUnknown(key, claimed, t) instanceof FencedWrite.Superseded superseded) {
                        return CompletableFuture.completedFuture(core.superseded(key, codec, superseded));
                    }
                    return CompletableFuture.failedFuture(EngineCore.propagate(t));
                }
                return stage.handle((value, failure) -> {
                    try (renewal) {
                        if (failure != null) {
                            Throwable cause = EngineCore.unwrap(failure);
                            FencedWrite released = releaseUnlessUnknown(key, claimed, cause);
                            if (released instanceof FencedWrite.Superseded superseded) {
                                return core.superseded(key, codec, superseded);
                            }
                            throw EngineCore.propagate(cause);
                        }
                        return record(key, claimed, attempt, codec, value);
                    }
                });
            }

            @Override
            public CompletionStage<Outcome<T>> answer(Outcome<T> outcome) {
                return CompletableFuture.completedFuture(outcome);
            }

            @Override
            public CompletionStage<Outcome<T>> unprotected(RuntimeException storeFailure) {
                try {
                    return operation.run(new Attempt(key, 1))
                            .thenApply(value -> new Outcome.Unprotected<>(value, storeFailure));
                } catch (Throwable t) {
                    return CompletableFuture.failedFuture(EngineCore.propagate(t));
                }
            }
        });
        return outcome.thenApply(o -> core.finished(key, o));
    }

    /** What {@link #decide} does with its verdict: the synchronous and the asynchronous entry points differ only here. */
    private interface Verdict<T, R> {
        /** This attempt holds the key: run the operation and record its outcome. */
        R run(ClaimResult.Claimed claimed);

        /** The operation does not run. */
        R answer(Outcome<T> outcome);

        /** The store failed and the engine fails open: run the operation without a key. */
        R unprotected(RuntimeException storeFailure);
    }

    /** Claims until the key is decided; a wait for another attempt sleeps on this thread, the store being blocking. */
    private <T, R> R decide(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec, Verdict<T, R> verdict) {
        EngineCore.Wait wait = core.startWait();
        while (true) {
            ClaimRequest request = core.claimRequest(key, fingerprint);
            EngineCore.Step<T> step;
            try {
                ClaimResult claim = timed("claim", () -> store.tryClaim(request));
                step = core.decide(key, claim, codec, wait);
            } catch (StoreFailure failure) {
                step = core.claimFailed(key, failure.getCause());
            }
            if (step instanceof EngineCore.Step.ClaimAgain<T> again) {
                try {
                    Sleeper.THREAD_SLEEP.sleep(Duration.ofNanos(again.pauseNanos()));
                    continue;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return verdict.answer(core.inProgress());
                }
            }
            if (step instanceof EngineCore.Step.Run<T> run) {
                return verdict.run(run.claimed());
            } else if (step instanceof EngineCore.Step.Unprotected<T> unprotected) {
                return verdict.unprotected(unprotected.storeFailure());
            }
            return verdict.answer(((EngineCore.Step.Answer<T>) step).outcome());
        }
    }

    private LeaseRenewal renewLease(IdempotencyKey key, ClaimResult.Claimed claimed) {
        return core.renewLease(store.isStandalone(), store.canRenewLease(), key, claimed, () -> {
            try {
                return CompletableFuture.completedFuture(
                        timed("renew lease", () -> store.renewLease(key, claimed.token(), policy().leaseTtl())));
            } catch (StoreFailure failure) {
                return CompletableFuture.failedFuture(failure.getCause());
            }
        });
    }

    /** Stores the operation's result, or releases the key, per the outcome policy, fenced by the claim's token. */
    private <T> Outcome<T> record(IdempotencyKey key, ClaimResult.Claimed claimed, Attempt attempt,
            ResponseCodec<T> codec, T value) {
        EngineCore.Recording recording;
        try {
            recording = core.prepare(key, codec, value);
        } catch (Throwable t) {
            releaseQuietly(key, claimed);
            throw EngineCore.propagate(t);
        }
        FencedWrite write = writeOutcome(key, claimed, recording);
        return core.recorded(key, attempt, codec, value, recording, write);
    }

    /** Completes (or releases) the key, written again after a pause on this thread as {@link EngineCore#pauseBeforeWritingAgain} says. */
    private FencedWrite writeOutcome(IdempotencyKey key, ClaimResult.Claimed claimed, EngineCore.Recording recording) {
        for (int n = 1; ; n++) {
            try {
                return recording.store()
                        ? timed("complete", () -> store.complete(key, claimed.token(), recording.sealed(),
                                policy().retention()))
                        : timed("release", () -> store.release(key, claimed.token()));
            } catch (StoreFailure failure) {
                long pause = core.pauseBeforeWritingAgain(store.isStandalone(), key, n, failure.getCause());
                try {
                    Sleeper.THREAD_SLEEP.sleep(Duration.ofNanos(pause));
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw core.outcomeUnknown(key, n, failure.getCause(), true);
                }
            }
        }
    }

    /**
     * After the operation threw: releases the key, unless {@link EngineCore#keepsKeyAfter} says the failure keeps
     * it in progress. Returns the release's answer (null if none was made or it failed): a
     * {@link FencedWrite.Superseded} says the key was decided by another attempt, whose answer is the caller's.
     */
    private FencedWrite releaseUnlessUnknown(IdempotencyKey key, ClaimResult.Claimed claimed, Throwable failure) {
        return core.keepsKeyAfter(key, failure) ? null : releaseQuietly(key, claimed);
    }

    private FencedWrite releaseQuietly(IdempotencyKey key, ClaimResult.Claimed claimed) {
        try {
            return timed("release", () -> store.release(key, claimed.token()));
        } catch (StoreFailure failure) {
            core.releaseFailed(key, failure.getCause());
            return null;
        }
    }

    /**
     * One store call, reported to the listener. Its failure comes out wrapped, so that a caller tells
     * the store's failure apart from one of its own code around the call.
     */
    private <R> R timed(String operation, Supplier<R> call) {
        long start = System.nanoTime();
        R result;
        try {
            result = call.get();
        } catch (RuntimeException e) {
            core.storeCallEnded(operation, start, e);
            throw new StoreFailure(e);
        }
        core.storeCallEnded(operation, start, null);
        return result;
    }

    /** A store call's failure, carried out of {@link #timed}; never leaves this class. */
    private static final class StoreFailure extends RuntimeException {
        StoreFailure(RuntimeException cause) {
            super(cause);
        }

        @Override
        public synchronized RuntimeException getCause() {
            return (RuntimeException) super.getCause();
        }
    }

    @Override
    public String toString() {
        return "RetrySafe[name=" + name() + ", store=" + store.name() + ", " + policy() + ", failOpen=" + failOpen()
                + "]";
    }

    /** Builds a {@link RetrySafe}; each value may be set once. */
    public static final class Builder extends EngineBuilder<Builder> {
        private final IdempotencyStore store;

        private Builder(IdempotencyStore store) {
            this.store = Require.notNull(store, "store");
        }

        public RetrySafe build() {
            return new RetrySafe(core(store.name()), store, new InFlightKeys(EngineCore.TIMER));
        }
    }
}
