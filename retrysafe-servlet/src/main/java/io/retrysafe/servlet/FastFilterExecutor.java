package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.FastPath.Cached;
import io.retrysafe.spi.RetrySafeListener;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

/**
 * A {@link FastPath} (Redis) in front of another executor (the transactional one): what the fast
 * path already knows is answered without the database, everything else goes to the delegate, which
 * stays the source of truth.
 *
 * <pre>{@code
 * IdempotentExecutor executor = FastFilterExecutor.builder(
 *         new JdbcTransactionalExecutor(transactional, dataSource),   // PostgreSQL decides
 *         RedisFastFilter.builder(redisClient).build(),                // Redis answers early
 *         transactional.engine()).build();
 * }</pre>
 *
 * <ol>
 * <li>lookup: a cached response with the same fingerprint is replayed, one with another fingerprint
 * is refused (422), an in-flight marker answers 409 with the policy's {@code Retry-After}; none of
 * them takes a database connection or runs the delegate;
 * <li>miss: the in-flight marker is set ({@code SET NX}), then the delegate runs; if the key already
 * held something, a second lookup says what: a marker is 409, a response is replayed (or 422);
 * <li>after the delegate returned (so after its commit): a stored result, or a replay the delegate
 * found, is published to the fast path; anything else (released, refused, failed, an exception, a
 * failed commit) clears the marker.
 * </ol>
 *
 * A published response lives for what is left of the retention, at most {@link Builder#replayTtl}:
 * it never outlives the record it copies when this request stored it; when it warms the cache from a
 * replay (whose record's age is unknown here), it may outlive the record by at most the replay TTL.
 * The fast path never throws for its own failures; anything it throws anyway is logged and treated as
 * a miss, so the request still reaches the delegate.
 */
public final class FastFilterExecutor implements IdempotentExecutor {
    /** The longest a published response lives in the fast path (bounds memory and a warmed entry's overshoot). */
    public static final Duration DEFAULT_REPLAY_TTL = Duration.ofHours(1);

    private static final System.Logger LOG = System.getLogger(FastFilterExecutor.class.getName());

    private final IdempotentExecutor delegate;
    private final FastPath fastPath;
    private final RetrySafe engine;
    private final Duration replayTtl;
    private final LongSupplier nanoTime;

    private FastFilterExecutor(Builder b) {
        this.delegate = b.delegate;
        this.fastPath = b.fastPath;
        this.engine = b.engine;
        this.replayTtl = b.replayTtl == null ? DEFAULT_REPLAY_TTL : b.replayTtl;
        this.nanoTime = b.nanoTime == null ? System::nanoTime : b.nanoTime;
    }

    /**
     * @param delegate the executor that decides (the transactional one)
     * @param fastPath what answers early (a {@code RedisFastFilter})
     * @param engine the delegate's engine: its policy (retention, {@code Retry-After}) applies to routes
     *     without their own, and its listener hears the outcomes answered from the fast path
     */
    public static Builder builder(IdempotentExecutor delegate, FastPath fastPath, RetrySafe engine) {
        return new Builder(delegate, fastPath, engine);
    }

    public IdempotentExecutor delegate() {
        return delegate;
    }

    public FastPath fastPath() {
        return fastPath;
    }

    public Duration replayTtl() {
        return replayTtl;
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        OperationPolicy p = policy == null ? engine.policy() : policy;
        Optional<Outcome<StoredResponse>> early = early(key, fingerprint, p);
        if (early.isPresent()) {
            return early.get();
        }
        long start = nanoTime.getAsLong();
        Outcome<StoredResponse> outcome = null;
        try {
            outcome = delegate.execute(request, key, fingerprint, policy, handler);
        } finally {
            // Reached with an outcome only once the delegate made it durable: a failed commit throws.
            afterDelegate(key, fingerprint, p, outcome, start);
        }
        return outcome;
    }

    @Override
    public CompletionStage<Outcome<StoredResponse>> executeAsync(HttpServletRequest request, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Operation<? extends CompletionStage<StoredResponse>> handler) {
        OperationPolicy p = policy == null ? engine.policy() : policy;
        Optional<Outcome<StoredResponse>> early = early(key, fingerprint, p);
        if (early.isPresent()) {
            return CompletableFuture.completedFuture(early.get());
        }
        long start = nanoTime.getAsLong();
        CompletionStage<Outcome<StoredResponse>> outcome;
        try {
            outcome = delegate.executeAsync(request, key, fingerprint, policy, handler);
        } catch (RuntimeException | Error e) {
            afterDelegate(key, fingerprint, p, null, start);
            throw e;
        }
        return outcome.whenComplete((done, failure) -> afterDelegate(key, fingerprint, p, done, start));
    }

    @Override
    public boolean isAsyncSupported() {
        return delegate.isAsyncSupported();
    }

    /** The answer the fast path gives without the delegate, if it has one. */
    private Optional<Outcome<StoredResponse>> early(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy p) {
        try {
            Optional<Cached> cached = lookup(key, fingerprint, p);
            if (cached.isPresent()) {
                return Optional.of(answer(key, early(cached.get(), p)));
            }
            if (!markInFlight(key, fingerprint)) {
                // Not set: the key holds something. A marker means a request in flight (409), but it may be
                // the committed response, which the lookup missed (it timed out, or the response was
                // published since): a completed request is replayed, never refused as in progress.
                Optional<Cached> now = lookup(key, fingerprint, p);
                if (now.isPresent()) {
                    return Optional.of(answer(key, early(now.get(), p)));
                }
                return Optional.of(answer(key, new Outcome.InProgress<>(p.retryAfter())));
            }
        } catch (StoredResponseUnreadableException e) {
            // The cached copy does not open (its key id is no longer configured, or it was altered in
            // Redis): the store decides, and a replay it answers replaces the cached copy.
            LOG.log(Level.WARNING, () -> "[" + engine.name() + "] cached response of key " + key.digest()
                    + " cannot be opened; asking the store: " + e.getMessage());
        }
        return Optional.empty();
    }

    private static Outcome<StoredResponse> early(Cached cached, OperationPolicy policy) {
        if (cached instanceof Cached.Replay replay) {
            return new Outcome.Replayed<>(replay.response());
        } else if (cached instanceof Cached.Mismatch) {
            return new Outcome.FingerprintMismatch<>();
        }
        return new Outcome.InProgress<>(policy.retryAfter());
    }

    private Outcome<StoredResponse> answer(IdempotencyKey key, Outcome<StoredResponse> outcome) {
        RetrySafeListener listener = engine.listener();
        try {
            listener.onOutcome(key, outcome);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + engine.name() + "] listener " + listener.getClass().getName()
                    + ".onOutcome threw; ignored", e);
        }
        return outcome;
    }

    private void afterDelegate(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy,
            Outcome<StoredResponse> outcome, long start) {
        if (outcome instanceof Outcome.Executed<StoredResponse> executed
                && executed.completion() == Outcome.Completion.STORED) {
            // The record's expiry is at least start + retention (it completed after start).
            Duration left = policy.retention().minusNanos(nanoTime.getAsLong() - start);
            publish(key, fingerprint, policy, executed.value(), left.compareTo(replayTtl) < 0 ? left : replayTtl);
        } else if (outcome instanceof Outcome.Replayed<StoredResponse> replayed) {
            Duration retention = policy.retention();
            publish(key, fingerprint, policy, replayed.value(),
                    retention.compareTo(replayTtl) < 0 ? retention : replayTtl);
        } else {
            clear(key);
        }
    }

    // Guarded calls: a fast path must never fail a request.

    /**
     * A cached response is opened with the policy's protection.
     *
     * @throws StoredResponseUnreadableException if it does not open
     */
    private Optional<Cached> lookup(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy) {
        Optional<Cached> cached;
        try {
            cached = fastPath.lookup(key, fingerprint);
        } catch (RuntimeException e) {
            warn("lookup", key, e);
            return Optional.empty();
        }
        if (cached != null && cached.isPresent() && cached.get() instanceof Cached.Replay replay) {
            return Optional.of(new Cached.Replay(policy.protection().open(key, replay.response())));
        }
        return cached == null ? Optional.empty() : cached;
    }

    private boolean markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
        try {
            return fastPath.markInFlight(key, fingerprint);
        } catch (RuntimeException e) {
            warn("markInFlight", key, e);
            return true;
        }
    }

    /** Cached as the store holds it: sealed by the policy's protection (encrypted, redacted), never in the clear. */
    private void publish(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy, StoredResponse response,
            Duration ttl) {
        try {
            if (ttl.isNegative() || ttl.isZero()) {
                fastPath.clear(key);
            } else {
                fastPath.publish(key, fingerprint, policy.protection().seal(key, response), ttl);
            }
        } catch (RuntimeException e) {
            warn("publish", key, e);
        }
    }

    private void clear(IdempotencyKey key) {
        try {
            fastPath.clear(key);
        } catch (RuntimeException e) {
            warn("clear", key, e);
        }
    }

    private void warn(String operation, IdempotencyKey key, RuntimeException e) {
        LOG.log(Level.WARNING, () -> "[" + engine.name() + "] fast path " + fastPath.name() + " threw on " + operation
                + " of key " + key.digest() + "; going on without it", e);
    }

    @Override
    public String toString() {
        return "FastFilterExecutor[fastPath=" + fastPath.name() + ", replayTtl=" + replayTtl + ", delegate=" + delegate
                + "]";
    }

    /** Builds a {@link FastFilterExecutor}; each value may be set once. */
    public static final class Builder {
        private final IdempotentExecutor delegate;
        private final FastPath fastPath;
        private final RetrySafe engine;
        private Duration replayTtl;
        private LongSupplier nanoTime;

        private Builder(IdempotentExecutor delegate, FastPath fastPath, RetrySafe engine) {
            this.delegate = Require.notNull(delegate, "delegate");
            this.fastPath = Require.notNull(fastPath, "fastPath");
            this.engine = Require.notNull(engine, "engine");
            if (delegate instanceof FastFilterExecutor) {
                throw new IllegalArgumentException("delegate must be the executor that decides, but was already a "
                        + "FastFilterExecutor");
            }
        }

        /**
         * The longest a published response lives in the fast path (1 h by default); shorter when less
         * of the retention is left. Bounds the fast path's memory to the responses of this window.
         */
        public Builder replayTtl(Duration replayTtl) {
            Require.unset(this.replayTtl, "replayTtl");
            this.replayTtl = Require.atLeastOneMilli(replayTtl, "replayTtl");
            return this;
        }

        /** The clock that measures how much of the retention is left ({@code System::nanoTime} by default). */
        public Builder nanoTime(LongSupplier nanoTime) {
            Require.unset(this.nanoTime, "nanoTime");
            this.nanoTime = Require.notNull(nanoTime, "nanoTime");
            return this;
        }

        public FastFilterExecutor build() {
            return new FastFilterExecutor(this);
        }
    }
}
