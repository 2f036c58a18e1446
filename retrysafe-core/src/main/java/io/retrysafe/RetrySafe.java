package io.retrysafe;

import io.retrysafe.Outcome.Completion;
import io.retrysafe.internal.GuardedListener;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
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

    private static final System.Logger LOG = System.getLogger(RetrySafe.class.getName());
    /** A duplicate waiting for the attempt in flight asks the store again after 5 ms, 10 ms, … up to 250 ms. */
    private static final Backoff POLL = Backoff.exponential(Duration.ofMillis(5), Duration.ofMillis(250));
    private static final int MAX_COMPLETION_ATTEMPTS = 10;

    private final String name;
    private final IdempotencyStore store;
    private final OperationPolicy policy;
    private final RetrySafeListener listener;
    private final boolean failOpen;
    private final InFlightKeys inFlight;
    private final int completionAttempts;
    private final Backoff completionBackoff;

    private RetrySafe(String name, IdempotencyStore store, OperationPolicy policy, RetrySafeListener listener,
            boolean failOpen, InFlightKeys inFlight, int completionAttempts, Backoff completionBackoff) {
        this.name = name;
        this.store = store;
        this.policy = policy;
        this.listener = listener;
        this.failOpen = failOpen;
        this.inFlight = inFlight;
        this.completionAttempts = completionAttempts;
        this.completionBackoff = completionBackoff;
    }

    public static Builder builder(IdempotencyStore store) {
        return new Builder(store);
    }

    /** The same engine with another policy, for an operation that needs its own retention or outcome policy. */
    public RetrySafe with(OperationPolicy policy) {
        return new RetrySafe(name, store, Require.notNull(policy, "policy"), listener, failOpen, inFlight,
                completionAttempts, completionBackoff);
    }

    /** The same engine on another store; transactional stores bind one per transaction. */
    public RetrySafe withStore(IdempotencyStore store) {
        return new RetrySafe(name, Require.notNull(store, "store"), policy, listener, failOpen, inFlight,
                completionAttempts, completionBackoff);
    }

    /**
     * The same engine reporting to {@code listener} instead (guarded as the builder guards it): for
     * an adapter that holds back the outcome until it knows whether its own transaction committed.
     */
    public RetrySafe withListener(RetrySafeListener listener) {
        return new RetrySafe(name, store, policy, new GuardedListener(name, Require.notNull(listener, "listener")),
                failOpen, inFlight, completionAttempts, completionBackoff);
    }

    public String name() {
        return name;
    }

    public OperationPolicy policy() {
        return policy;
    }

    public IdempotencyStore store() {
        return store;
    }

    public boolean failOpen() {
        return failOpen;
    }

    /** The engine's listener, guarded: adapters report what they refuse before the engine (bad keys) through it. */
    public RetrySafeListener listener() {
        return listener;
    }

    /** The keys in flight on this instance: one registry, shared by every copy of this engine. */
    public InFlightKeys inFlight() {
        return inFlight;
    }

    /**
     * Runs {@code work} (this engine's {@link #execute}, or a transactional mode's, with the connection
     * it takes) as the only request of {@code key} in flight on this instance. A duplicate with the
     * same fingerprint waits here, without a connection, up to {@code wait} for it to end, then goes
     * on to the store (which replays), or is answered in progress; another request of the key goes on
     * to the store, which decides. Call it before taking a connection or touching the store; the key
     * is freed however {@code work} ends.
     */
    public <T> Outcome<T> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, Duration wait,
            Supplier<Outcome<T>> work) {
        Require.notNull(work, "work");
        try (InFlightKeys.Admission admission = inFlight.admit(key, fingerprint, wait)) {
            if (admission instanceof InFlightKeys.Admission.Busy) {
                Outcome<T> busy = new Outcome.InProgress<>(policy.retryAfter());
                listener.onOutcome(key, busy);
                return busy;
            }
            return work.get();
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
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(codec, "codec");
        Require.notNull(operation, "operation");
        Outcome<T> outcome = decide(key, fingerprint, codec, new Verdict<T, Outcome<T>>() {
            @Override
            public Outcome<T> run(ClaimResult.Claimed claimed) {
                Attempt attempt = begin(key, claimed);
                try (LeaseRenewal renewal = renewLease(key, claimed)) {
                    T value;
                    try {
                        value = operation.run(attempt);
                    } catch (Throwable t) {
                        releaseUnlessUnknown(key, claimed.token(), t);
                        throw propagate(t);
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
                    return new Outcome.Unprotected<>(operation.run(new Attempt(key, 1)), storeFailure);
                } catch (Throwable t) {
                    throw propagate(t);
                }
            }
        });
        listener.onOutcome(key, outcome);
        return outcome;
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
                Attempt attempt = begin(key, claimed);
                // Renewed until the outcome is written, on whichever thread completes the stage.
                LeaseRenewal renewal = renewLease(key, claimed);
                CompletionStage<T> stage;
                try {
                    stage = Require.notNull(operation.run(attempt), "the operation's stage");
                } catch (Throwable t) {
                    renewal.close();
                    releaseUnlessUnknown(key, claimed.token(), t);
                    return CompletableFuture.failedFuture(propagate(t));
                }
                return stage.handle((value, failure) -> {
                    try (renewal) {
                        if (failure != null) {
                            releaseUnlessUnknown(key, claimed.token(), unwrap(failure));
                            throw propagate(unwrap(failure));
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
                    return CompletableFuture.failedFuture(propagate(t));
                }
            }
        });
        return outcome.thenApply(o -> {
            listener.onOutcome(key, o);
            return o;
        });
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

    private <T, R> R decide(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec, Verdict<T, R> verdict) {
        long deadline = System.nanoTime() + policy.waitForResult().toNanos();
        for (int poll = 1; ; poll++) {
            OwnerToken token = OwnerToken.random();
            ClaimRequest request = new ClaimRequest(key, fingerprint, token, policy.leaseTtl(), policy.retention());
            ClaimResult claim;
            try {
                claim = timed("claim", () -> store.tryClaim(request));
            } catch (RuntimeException e) {
                return storeFailedBeforeRun(key, e, verdict);
            }
            if (claim instanceof ClaimResult.Claimed claimed) {
                return verdict.run(claimed);
            } else if (claim instanceof ClaimResult.Unclaimed unclaimed) {
                // Key last: the completion inserts the record, or finds another attempt's committed first.
                return verdict.run(new ClaimResult.Claimed(unclaimed.token(), 1));
            } else if (claim instanceof ClaimResult.Replay replay) {
                return verdict.answer(new Outcome.Replayed<>(codec.decode(open(key, replay.response()))));
            } else if (claim instanceof ClaimResult.FingerprintMismatch) {
                return verdict.answer(new Outcome.FingerprintMismatch<>());
            }
            Duration leaseRemaining = ((ClaimResult.InProgress) claim).leaseRemaining();
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return verdict.answer(new Outcome.InProgress<>(policy.retryAfter()));
            }
            // Poll rather than subscribe: the store is the only shared state, and the wait is opt-in and bounded.
            long pause = Math.min(Math.min(POLL.delay(poll).toNanos(), remaining),
                    Math.max(leaseRemaining.toNanos(), 1_000_000L));
            try {
                TimeUnit.NANOSECONDS.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return verdict.answer(new Outcome.InProgress<>(policy.retryAfter()));
            }
        }
    }

    private Attempt begin(IdempotencyKey key, ClaimResult.Claimed claimed) {
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
    private LeaseRenewal renewLease(IdempotencyKey key, ClaimResult.Claimed claimed) {
        return LeaseRenewal.start(store.isStandalone() && store.canRenewLease(), name, key, claimed.token(),
                policy.leaseTtl(), () -> timed("renew lease", () -> store.renewLease(key, claimed.token(),
                        policy.leaseTtl())));
    }

    /** Stores the operation's result, or releases the key, per the outcome policy, fenced by the claim's token. */
    private <T> Outcome<T> record(IdempotencyKey key, ClaimResult.Claimed claimed, Attempt attempt,
            ResponseCodec<T> codec, T value) {
        OutcomePolicy.Decision decision;
        StoredResponse response;
        try {
            response = codec.encode(value);
            decision = policy.outcomePolicy().decide(response);
        } catch (Throwable t) {
            releaseQuietly(key, claimed.token());
            throw propagate(t);
        }
        StoredResponse sealed;
        try {
            sealed = decision == OutcomePolicy.Decision.STORE ? policy.protection().seal(key, response) : null;
        } catch (RuntimeException e) {
            // Nothing was stored: the key is freed, so a retry runs again rather than waiting for the lease.
            releaseQuietly(key, claimed.token());
            throw e;
        }
        FencedWrite write = writeOutcome(key, claimed.token(), decision == OutcomePolicy.Decision.STORE, sealed);
        if (write instanceof FencedWrite.Superseded superseded) {
            // This attempt's writes were rolled back: the caller gets what the key holds, as a duplicate would.
            LOG.log(Level.DEBUG, () -> "[" + name + "] attempt of key " + key.digest() + " was superseded by another's"
                    + " commit; its writes were rolled back");
            ClaimResult decided = superseded.decided();
            if (decided instanceof ClaimResult.Replay replay) {
                return new Outcome.Replayed<>(codec.decode(open(key, replay.response())));
            } else if (decided instanceof ClaimResult.FingerprintMismatch) {
                return new Outcome.FingerprintMismatch<>();
            }
            return new Outcome.InProgress<>(policy.retryAfter());
        }
        if (write instanceof FencedWrite.LeaseLost) {
            listener.onLeaseLost(key);
            LOG.log(Level.WARNING, () -> "[" + name + "] attempt " + attempt.number() + " of key " + key.digest()
                    + " lost its lease before completing; its result was not stored");
            return new Outcome.Executed<>(value, attempt, Completion.LEASE_LOST);
        }
        return new Outcome.Executed<>(value, attempt,
                decision == OutcomePolicy.Decision.STORE ? Completion.STORED : Completion.RELEASED);
    }

    /**
     * Completes (or releases) the key. In standalone mode a failed write is tried again, up to
     * {@code completionAttempts} in all with a doubling pause from {@code completionBackoff}: the
     * operation's effects are out, and a lost completion would let a retry run it again. Still failing,
     * the outcome is unknown ({@link OutcomeUnknownException}). Bound to a transaction, the first failure
     * is final: the completion is the transaction's, and the operation's writes were rolled back with it.
     */
    private FencedWrite writeOutcome(IdempotencyKey key, OwnerToken token, boolean store, StoredResponse sealed) {
        boolean standalone = this.store.isStandalone();
        int attempts = standalone ? completionAttempts : 1;
        for (int n = 1; ; n++) {
            try {
                return store
                        ? timed("complete", () -> this.store.complete(key, token, sealed, policy.retention()))
                        : timed("release", () -> this.store.release(key, token));
            } catch (RuntimeException e) {
                if (!standalone) {
                    throw new StoreUnavailableException(this.store.name(), policy.retryAfter(), "[" + name + "] the "
                            + "operation for key " + key.digest() + " ran, but the store failed to record its outcome: "
                            + e.getMessage(), e);
                }
                boolean interrupted = false;
                if (n < attempts) {
                    int failed = n;
                    LOG.log(Level.WARNING, () -> "[" + name + "] recording the outcome of key " + key.digest()
                            + " failed (" + failed + " of " + attempts + "); trying again: " + e);
                    if (completionBackoff.sleep(n)) {
                        continue;
                    }
                    interrupted = true;
                }
                int tried = n;
                LOG.log(Level.ERROR, () -> "[" + name + "] the operation for key " + key.digest() + " ran, but its "
                        + "outcome could not be recorded after " + tried + " attempt(s); it may run again once its "
                        + "lease expires: " + e);
                throw new OutcomeUnknownException(this.store.name(), policy.retryAfter(), "[" + name + "] the "
                        + "operation for key " + key.digest() + " ran, but the store failed to record its outcome "
                        + (interrupted ? "(interrupted while trying again)" : "in " + tried + " attempts") + ": "
                        + e.getMessage(), e);
            }
        }
    }

    /** The stored response as it was before {@link StoredResponseProtection#seal}; never what is stored, if it cannot be opened. */
    private StoredResponse open(IdempotencyKey key, StoredResponse stored) {
        try {
            return policy.protection().open(key, stored);
        } catch (StoredResponseUnreadableException e) {
            LOG.log(Level.ERROR, () -> "[" + name + "] " + e.getMessage() + "; refusing the replay, not running again");
            throw e;
        }
    }

    private <T, R> R storeFailedBeforeRun(IdempotencyKey key, RuntimeException e, Verdict<T, R> verdict) {
        // Fail-open covers a store that cannot be reached, nothing else: a full store, a record it
        // cannot read, or a misconfiguration would otherwise run every request unprotected for good.
        if (failOpen && e instanceof StoreUnavailableException sue && sue.isUnreachable()) {
            LOG.log(Level.WARNING, () -> "[" + name + "] store " + store.name() + " failed; running key " + key.digest()
                    + " unprotected (fail-open): " + e);
            return verdict.unprotected(e);
        }
        LOG.log(Level.WARNING, () -> "[" + name + "] store " + store.name() + " failed; refusing key " + key.digest()
                + ": " + e);
        StoreUnavailableException failure = e instanceof StoreUnavailableException sue
                ? sue.withRetryAfter(policy.retryAfter())
                : new StoreUnavailableException(store.name(), policy.retryAfter(),
                        "[" + name + "] idempotency store " + store.name() + " failed: " + e.getMessage(), e);
        return verdict.answer(new Outcome.StoreUnavailable<>(failure));
    }

    /**
     * After the operation threw: releases the key so that a retry runs again, unless the operation said its own
     * outcome is unknown ({@link OutcomeUnknownException}, such as a request sent to a remote service that never
     * answered). Its effect may be happening still; the key stays in progress, its lease no longer renewed, so no
     * retry runs it a second time before the lease ends.
     */
    private void releaseUnlessUnknown(IdempotencyKey key, OwnerToken token, Throwable failure) {
        if (failure instanceof OutcomeUnknownException) {
            LOG.log(Level.WARNING, () -> "[" + name + "] the operation for key " + key.digest() + " does not know its "
                    + "outcome; the key stays in progress until its lease ends: " + failure.getMessage());
            return;
        }
        releaseQuietly(key, token);
    }

    private void releaseQuietly(IdempotencyKey key, OwnerToken token) {
        try {
            timed("release", () -> store.release(key, token));
        } catch (RuntimeException e) {
            // The lease expires on its own; the operation's own failure is what the caller must see.
            LOG.log(Level.WARNING, () -> "[" + name + "] could not release key " + key.digest()
                    + " after a failed attempt; it frees when its lease expires: " + e);
        }
    }

    private <R> R timed(String operation, Supplier<R> call) {
        long start = System.nanoTime();
        try {
            return call.get();
        } catch (RuntimeException e) {
            listener.onStoreError(store.name(), operation, e);
            throw e;
        } finally {
            listener.onStoreLatency(store.name(), operation, System.nanoTime() - start);
        }
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }

    private static RuntimeException propagate(Throwable t) {
        if (t instanceof RuntimeException re) {
            return re;
        }
        if (t instanceof Error error) {
            throw error;
        }
        return new OperationFailedException(t);
    }

    @Override
    public String toString() {
        return "RetrySafe[name=" + name + ", store=" + store.name() + ", " + policy + ", failOpen=" + failOpen + "]";
    }

    /** Builds a {@link RetrySafe}; each value may be set once. */
    public static final class Builder {
        private final IdempotencyStore store;
        private String name;
        private OperationPolicy policy;
        private RetrySafeListener listener;
        private Boolean failOpen;
        private Integer completionAttempts;
        private Duration completionBackoff;

        private Builder(IdempotencyStore store) {
            this.store = Require.notNull(store, "store");
        }

        /** Prefixes every log line, so that several engines in one process can be told apart. */
        public Builder name(String name) {
            Require.unset(this.name, "name");
            this.name = Require.notBlank(name, "name");
            return this;
        }

        /** The default policy for {@link #execute}; {@link RetrySafe#with} overrides it per operation. */
        public Builder policy(OperationPolicy policy) {
            Require.unset(this.policy, "policy");
            this.policy = Require.notNull(policy, "policy");
            return this;
        }

        public Builder listener(RetrySafeListener listener) {
            Require.unset(this.listener, "listener");
            this.listener = Require.notNull(listener, "listener");
            return this;
        }

        /**
         * When the store cannot be reached before the operation runs: {@code false} (the default)
         * refuses with {@link Outcome.StoreUnavailable}; {@code true} runs the operation unprotected.
         * Only an unreachable store ({@link StoreUnavailableException#isUnreachable()}) fails open: a
         * full store, a record that cannot be read, or any other failure is still refused. Fail open
         * only where a duplicate effect is cheaper than an outage.
         */
        public Builder failOpen(boolean failOpen) {
            Require.unset(this.failOpen, "failOpen");
            this.failOpen = failOpen;
            return this;
        }

        /**
         * Standalone mode: how many times, the first included, the outcome of an operation that ran is
         * written before the caller is told it is unknown ({@link OutcomeUnknownException}); 1 to 10.
         */
        public Builder completionAttempts(int completionAttempts) {
            Require.unset(this.completionAttempts, "completionAttempts");
            this.completionAttempts = Require.between(completionAttempts, 1, MAX_COMPLETION_ATTEMPTS,
                    "completionAttempts");
            return this;
        }

        /** The first pause between two writes of an outcome, doubled after each; at most 10 s. */
        public Builder completionBackoff(Duration completionBackoff) {
            Require.unset(this.completionBackoff, "completionBackoff");
            Require.atLeastOneMilli(completionBackoff, "completionBackoff");
            if (completionBackoff.compareTo(Duration.ofSeconds(10)) > 0) {
                throw new IllegalArgumentException("completionBackoff must be at most 10s, but was " + completionBackoff);
            }
            this.completionBackoff = completionBackoff;
            return this;
        }

        public RetrySafe build() {
            String n = name == null ? DEFAULT_NAME : name;
            return new RetrySafe(n, store, policy == null ? OperationPolicy.ofDefaults() : policy,
                    new GuardedListener(n, listener == null ? RetrySafeListener.NONE : listener),
                    failOpen == null ? DEFAULT_FAIL_OPEN : failOpen, new InFlightKeys(),
                    completionAttempts == null ? DEFAULT_COMPLETION_ATTEMPTS : completionAttempts,
                    doubling(completionBackoff == null ? DEFAULT_COMPLETION_BACKOFF : completionBackoff));
        }

        /** Doubling from {@code first} with no cap short of the last pause: at most nine pauses, the last 256 × {@code first}. */
        private static Backoff doubling(Duration first) {
            return Backoff.exponential(first, first.multipliedBy(1L << (MAX_COMPLETION_ATTEMPTS - 2)));
        }
    }
}
