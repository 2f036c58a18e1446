package io.retrysafe;

import io.retrysafe.Outcome.Completion;
import io.retrysafe.internal.GuardedListener;
import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The algorithm both engines share, {@link RetrySafe} on a blocking store and {@link AsyncRetrySafe}
 * on a non-blocking one: what a claim's answer means (run, replay, refuse, wait), what an outcome is
 * written as, what a fenced write's answer means, when a failed write is tried again, and what the
 * listener hears. The engines differ only in how they call the store and how they wait: one blocks
 * its thread, the other chains stages and schedules its pauses. Immutable; one per engine and store.
 * Whether the store is standalone is asked per call, as the store answers it then.
 */
final class EngineCore {
    private static final System.Logger LOG = System.getLogger(RetrySafe.class.getName());
    /** A duplicate waiting for the attempt in flight asks the store again after 5 ms, 10 ms, … up to 250 ms. */
    private static final Backoff POLL = Backoff.exponential(Duration.ofMillis(5), Duration.ofMillis(250));
    /**
     * Where the asynchronous engine's pauses and every lease's heartbeat are scheduled: shared by
     * the process, its tasks are short (a store call started, never awaited), and its threads must
     * not keep a JVM alive.
     */
    static final ScheduledThreadPoolExecutor TIMER = timer();

    final String name;
    final String storeName;
    final OperationPolicy policy;
    final RetrySafeListener listener;
    final boolean failOpen;
    final int completionAttempts;
    final Backoff completionBackoff;

    EngineCore(String name, String storeName, OperationPolicy policy, RetrySafeListener listener,
            boolean failOpen, int completionAttempts, Backoff completionBackoff) {
        this.name = name;
        this.storeName = storeName;
        this.policy = policy;
        this.listener = listener;
        this.failOpen = failOpen;
        this.completionAttempts = completionAttempts;
        this.completionBackoff = completionBackoff;
    }

    private static ScheduledThreadPoolExecutor timer() {
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(2, r -> {
            Thread t = new Thread(r, "retrysafe-timer");
            t.setDaemon(true);
            return t;
        });
        pool.setRemoveOnCancelPolicy(true);
        return pool;
    }

    EngineCore with(OperationPolicy policy) {
        return new EngineCore(name, storeName, policy, listener, failOpen, completionAttempts,
                completionBackoff);
    }

    EngineCore withStore(String storeName) {
        return new EngineCore(name, storeName, policy, listener, failOpen, completionAttempts,
                completionBackoff);
    }

    EngineCore withListener(RetrySafeListener listener) {
        return new EngineCore(name, storeName, policy, new GuardedListener(name, listener), failOpen,
                completionAttempts, completionBackoff);
    }

    // ---------------------------------------------------------------- deciding from a claim

    /** What to do after one claim. */
    sealed interface Step<T> {
        /** This attempt holds the key: run the operation, then record its outcome. */
        record Run<T>(ClaimResult.Claimed claimed) implements Step<T> {
        }

        /** The operation does not run; this is the answer. */
        record Answer<T>(Outcome<T> outcome) implements Step<T> {
        }

        /** Another attempt holds the key and the policy waits for it: claim again after this pause. */
        record ClaimAgain<T>(long pauseNanos) implements Step<T> {
        }

        /** The store could not be reached and the engine fails open: run the operation without a key. */
        record Unprotected<T>(RuntimeException storeFailure) implements Step<T> {
        }
    }

    /** One call's wait for a key another attempt holds: bounded by the policy, polled with the pauses of {@link #POLL}. */
    final class Wait {
        private final long deadline = System.nanoTime() + policy.waitForResult().toNanos();
        private int polls;

        /** The next pause, or a negative number when the bound is spent. */
        private long next(Duration leaseRemaining) {
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return -1;
            }
            // Poll rather than subscribe: the store is the only shared state, and the wait is opt-in and bounded.
            polls++;
            return Math.min(Math.min(POLL.delay(polls).toNanos(), remaining),
                    Math.max(leaseRemaining.toNanos(), 1_000_000L));
        }
    }

    Wait startWait() {
        return new Wait();
    }

    /** A claim of {@code key} with a fresh token, the policy's lease and retention. */
    ClaimRequest claimRequest(IdempotencyKey key, Fingerprint fingerprint) {
        return new ClaimRequest(key, fingerprint, OwnerToken.random(), policy.leaseTtl(), policy.retention());
    }

    /**
     * What the store's answer to a claim means for this call.
     *
     * @throws StoredResponseUnreadableException if a replay's stored response cannot be opened
     */
    <T> Step<T> decide(IdempotencyKey key, ClaimResult claim, ResponseCodec<T> codec, Wait wait) {
        if (claim instanceof ClaimResult.Claimed claimed) {
            return new Step.Run<>(claimed);
        } else if (claim instanceof ClaimResult.Unclaimed unclaimed) {
            // Key last: the completion inserts the record, or finds another attempt's committed first.
            return new Step.Run<>(new ClaimResult.Claimed(unclaimed.token(), 1));
        } else if (claim instanceof ClaimResult.Replay replay) {
            return new Step.Answer<>(new Outcome.Replayed<>(codec.decode(open(key, replay.response()))));
        } else if (claim instanceof ClaimResult.FingerprintMismatch) {
            return new Step.Answer<>(new Outcome.FingerprintMismatch<>());
        }
        long pause = wait.next(((ClaimResult.InProgress) claim).leaseRemaining());
        return pause < 0 ? new Step.Answer<>(inProgress()) : new Step.ClaimAgain<>(pause);
    }

    /** The answer to a call refused because another attempt holds its key. */
    <T> Outcome<T> inProgress() {
        return new Outcome.InProgress<>(policy.retryAfter());
    }

    /** The claim itself failed: refuse (fail closed), or run unprotected when the store was unreachable and the engine fails open. */
    <T> Step<T> claimFailed(IdempotencyKey key, RuntimeException e) {
        // Fail-open covers a store that cannot be reached, nothing else: a full store, a record it
        // cannot read, or a misconfiguration would otherwise run every request unprotected for good.
        if (failOpen && e instanceof StoreUnavailableException sue && sue.isUnreachable()) {
            LOG.log(Level.WARNING, () -> "[" + name + "] store " + storeName + " failed; running key " + key.digest()
                    + " unprotected (fail-open): " + e);
            return new Step.Unprotected<>(e);
        }
        LOG.log(Level.WARNING, () -> "[" + name + "] store " + storeName + " failed; refusing key " + key.digest()
                + ": " + e);
        StoreUnavailableException failure = e instanceof StoreUnavailableException sue
                ? sue.withRetryAfter(policy.retryAfter())
                : new StoreUnavailableException(storeName, policy.retryAfter(),
                        "[" + name + "] idempotency store " + storeName + " failed: " + e.getMessage(), e, false);
        return new Step.Answer<>(new Outcome.StoreUnavailable<>(failure));
    }

    /** The attempt a claim starts; a takeover is reported and logged. */
    Attempt begin(IdempotencyKey key, ClaimResult.Claimed claimed) {
        Attempt attempt = new Attempt(key, claimed.attempt());
        if (!attempt.isFirst()) {
            listener.onTakeover(key, attempt.number());
            LOG.log(Level.INFO, () -> "[" + name + "] key " + key.digest() + " runs again as attempt " + attempt.number());
        }
        return attempt;
    }

    /**
     * Standalone: renews the lease while the operation runs and its outcome is written, so that a slow
     * operation is not taken over. Bound to a transaction, nobody can take the key over.
     */
    LeaseRenewal renewLease(boolean standalone, boolean canRenew, IdempotencyKey key, ClaimResult.Claimed claimed,
            Supplier<CompletionStage<FencedWrite>> renew) {
        return LeaseRenewal.start(standalone && canRenew, name, key, claimed.token(), policy.leaseTtl(), renew);
    }

    /** The stored response as it was before {@link StoredResponseProtection#seal}; never what is stored, if it cannot be opened. */
    StoredResponse open(IdempotencyKey key, StoredResponse stored) {
        try {
            return policy.protection().open(key, stored);
        } catch (StoredResponseUnreadableException e) {
            LOG.log(Level.ERROR, () -> "[" + name + "] " + e.getMessage() + "; refusing the replay, not running again");
            throw e;
        }
    }

    // ---------------------------------------------------------------- recording the outcome

    /** What the operation's result is written as: its sealed response (stored), or nothing (the key is released). */
    record Recording(boolean store, StoredResponse sealed) {
    }

    /**
     * Encodes the result, applies the outcome policy and seals the response. Whatever this throws,
     * nothing was stored: the caller releases the key (so a retry runs again rather than waiting for
     * the lease) and propagates it.
     */
    <T> Recording prepare(IdempotencyKey key, ResponseCodec<T> codec, T value) {
        StoredResponse response = codec.encode(value);
        OutcomePolicy.Decision decision = policy.outcomePolicy().decide(response);
        return decision == OutcomePolicy.Decision.STORE
                ? new Recording(true, policy.protection().seal(key, response))
                : new Recording(false, null);
    }

    /** The outcome of an attempt whose result was written (or refused) as {@code write} says. */
    <T> Outcome<T> recorded(IdempotencyKey key, Attempt attempt, ResponseCodec<T> codec, T value, Recording recording,
            FencedWrite write) {
        if (write instanceof FencedWrite.Superseded superseded) {
            return superseded(key, codec, superseded);
        }
        if (write instanceof FencedWrite.LeaseLost) {
            listener.onLeaseLost(key);
            LOG.log(Level.WARNING, () -> "[" + name + "] attempt " + attempt.number() + " of key " + key.digest()
                    + " lost its lease before completing; its result was not stored");
            return new Outcome.Executed<>(value, attempt, Completion.LEASE_LOST);
        }
        return new Outcome.Executed<>(value, attempt, recording.store() ? Completion.STORED : Completion.RELEASED);
    }

    /**
     * A write that found the key decided by another attempt's record (key last): this attempt's writes were
     * rolled back, and the caller gets what the key holds, as a duplicate would.
     */
    <T> Outcome<T> superseded(IdempotencyKey key, ResponseCodec<T> codec, FencedWrite.Superseded superseded) {
        LOG.log(Level.DEBUG, () -> "[" + name + "] attempt of key " + key.digest() + " was superseded by another's"
                + " commit; its writes were rolled back");
        ClaimResult decided = superseded.decided();
        if (decided instanceof ClaimResult.Replay replay) {
            return new Outcome.Replayed<>(codec.decode(open(key, replay.response())));
        } else if (decided instanceof ClaimResult.FingerprintMismatch) {
            return new Outcome.FingerprintMismatch<>();
        }
        return inProgress();
    }

    /**
     * Writing the outcome failed for the {@code n}th time. In standalone mode it is tried again, up
     * to {@code completionAttempts} in all, after the pauses of {@code completionBackoff}: the
     * operation's effects are out, and a lost completion would let a retry run it again. This returns
     * that pause. Still failing, the outcome is unknown ({@link OutcomeUnknownException}, thrown).
     * Bound to a transaction, the first failure is final: the completion is the transaction's, and the
     * operation's writes were rolled back with it.
     */
    long pauseBeforeWritingAgain(boolean standalone, IdempotencyKey key, int n, RuntimeException e) {
        if (!standalone) {
            throw new StoreUnavailableException(storeName, policy.retryAfter(), "[" + name + "] the "
                    + "operation for key " + key.digest() + " ran, but the store failed to record its outcome: "
                    + e.getMessage(), e);
        }
        if (n >= completionAttempts) {
            throw outcomeUnknown(key, n, e, false);
        }
        LOG.log(Level.WARNING, () -> "[" + name + "] recording the outcome of key " + key.digest()
                + " failed (" + n + " of " + completionAttempts + "); trying again: " + e);
        return completionBackoff.delay(n).toNanos();
    }

    /** The outcome of an operation that ran could not be recorded after {@code tried} writes. */
    OutcomeUnknownException outcomeUnknown(IdempotencyKey key, int tried, RuntimeException e, boolean interrupted) {
        LOG.log(Level.ERROR, () -> "[" + name + "] the operation for key " + key.digest() + " ran, but its "
                + "outcome could not be recorded after " + tried + " attempt(s); it may run again once its "
                + "lease expires: " + e);
        return new OutcomeUnknownException(storeName, policy.retryAfter(), "[" + name + "] the "
                + "operation for key " + key.digest() + " ran, but the store failed to record its outcome "
                + (interrupted ? "(interrupted while trying again)" : "in " + tried + " attempts") + ": "
                + e.getMessage(), e);
    }

    /**
     * Whether the operation's {@code failure} keeps its key in progress instead of releasing it: an
     * {@link OutcomeUnknownException} says the operation cannot know whether its effect happened (a
     * request sent to another service that never answered). Its effect may be happening still, so the
     * key stays in progress, its lease no longer renewed, and no retry runs it a second time before the
     * lease ends. Any other failure releases the key, so that a retry runs again.
     */
    boolean keepsKeyAfter(IdempotencyKey key, Throwable failure) {
        if (failure instanceof OutcomeUnknownException) {
            LOG.log(Level.WARNING, () -> "[" + name + "] the operation for key " + key.digest() + " does not know its "
                    + "outcome; the key stays in progress until its lease ends: " + failure.getMessage());
            return true;
        }
        return false;
    }

    /** A release after a failed attempt failed: the lease expires on its own, and the operation's own failure is what the caller must see. */
    void releaseFailed(IdempotencyKey key, RuntimeException e) {
        LOG.log(Level.WARNING, () -> "[" + name + "] could not release key " + key.digest()
                + " after a failed attempt; it frees when its lease expires: " + e);
    }

    // ---------------------------------------------------------------- reporting

    /** One store call ended, {@code failure} null if it succeeded: its latency, and its error, go to the listener. */
    void storeCallEnded(String operation, long startNanos, Throwable failure) {
        if (failure != null) {
            listener.onStoreError(storeName, operation, asRuntime(unwrap(failure)));
        }
        listener.onStoreLatency(storeName, operation, System.nanoTime() - startNanos);
    }

    /** The call ended with {@code outcome}: the listener hears it. */
    <T> Outcome<T> finished(IdempotencyKey key, Outcome<T> outcome) {
        listener.onOutcome(key, outcome);
        return outcome;
    }

    // ---------------------------------------------------------------- failures and stages

    /** A stage completed after {@code nanos}, on the shared timer: a pause that blocks no thread. */
    static CompletableFuture<Void> after(long nanos) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        TIMER.schedule(() -> done.complete(null), nanos, TimeUnit.NANOSECONDS);
        return done;
    }

    /**
     * Tells the keys in flight that a request's answer is stored, so that its duplicates go on to the store
     * together: it ran and its answer was stored, or it was a replay itself.
     */
    static void markAnswered(InFlightKeys.Admission admission, Outcome<?> outcome) {
        markAnswered(admission, outcome, null);
    }

    /**
     * {@link #markAnswered(InFlightKeys.Admission, Outcome)}, leaving the answer for the duplicates waiting for it
     * when its {@code codec} is known ({@link #replayHeld}).
     */
    static void markAnswered(InFlightKeys.Admission admission, Outcome<?> outcome, ResponseCodec<?> codec) {
        if (!(admission instanceof InFlightKeys.Admission.Entered entered)) {
            return;
        }
        Object value;
        if (outcome instanceof Outcome.Replayed<?> replayed) {
            value = replayed.value();
        } else if (outcome instanceof Outcome.Executed<?> executed
                && executed.completion() == Outcome.Completion.STORED) {
            value = executed.value();
        } else {
            return;
        }
        if (codec == null || value == null) {
            entered.answered();
        } else {
            entered.answered(new HeldAnswer(codec, value));
        }
    }

    /** A stored answer as a request leaves it in memory for its waiting duplicates: its value and its codec. */
    record HeldAnswer(ResponseCodec<?> codec, Object value) {
    }

    /**
     * What the store would replay for an answer a request left in memory ({@link HeldAnswer}): the value encoded
     * and sealed as it was stored, then opened and decoded as a replay is. Null where this cannot be told here
     * (another codec, a protection that fails): the store answers then, as without the held answer.
     */
    @SuppressWarnings("unchecked")
    <T> Outcome<T> replayHeld(IdempotencyKey key, Object held, ResponseCodec<T> codec) {
        if (codec == null || !(held instanceof HeldAnswer answer) || answer.codec() != codec) {
            return null;
        }
        try {
            StoredResponse sealed = policy.protection().seal(key, codec.encode((T) answer.value()));
            return new Outcome.Replayed<>(codec.decode(policy.protection().open(key, sealed)));
        } catch (RuntimeException e) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] the answer held for key " + key.digest()
                    + " could not be replayed from memory; asking the store: " + e);
            return null;
        }
    }

    static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    /** A store's failure as the runtime exception the engine reports; an {@link Error} is rethrown. */
    static RuntimeException asRuntime(Throwable t) {
        if (t instanceof RuntimeException re) {
            return re;
        }
        if (t instanceof Error error) {
            throw error;
        }
        return new CompletionException(t);
    }

    /** An operation's failure as the caller sees it: unchecked as it was, a checked one wrapped. */
    static RuntimeException propagate(Throwable t) {
        if (t instanceof RuntimeException re) {
            return re;
        }
        if (t instanceof Error error) {
            throw error;
        }
        return new OperationFailedException(t);
    }
}
