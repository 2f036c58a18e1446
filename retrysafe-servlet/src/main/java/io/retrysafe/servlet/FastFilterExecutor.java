package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.FastPathFilter;
import io.retrysafe.spi.FastPath;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

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
    public static final Duration DEFAULT_REPLAY_TTL = FastPathFilter.DEFAULT_REPLAY_TTL;

    private final IdempotentExecutor delegate;
    private final FastPath fastPath;
    private final RetrySafe engine;
    private final Duration replayTtl;
    private final FastPathFilter filter;

    private FastFilterExecutor(Builder b, Duration replayTtl, LongSupplier nanoTime,
            UnaryOperator<FastPathFilter> local) {
        this.delegate = b.delegate;
        this.fastPath = b.fastPath;
        this.engine = b.engine;
        this.replayTtl = replayTtl;
        this.filter = local.apply(FastPathFilter.of(fastPath, engine.name(), engine.listener(), replayTtl, nanoTime));
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

    /** The most the responses kept in this process take, in bytes ({@link Builder#localReplays}); 0 when off. */
    public long localReplaysMaxBytes() {
        return filter.localMaxBytes();
    }

    /** The longest a response is kept in this process ({@link Builder#localReplays}); zero when off. */
    public Duration localReplaysTtl() {
        return filter.localTtl();
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        OperationPolicy p = policy == null ? engine.policy() : policy;
        Optional<Outcome<StoredResponse>> early = early(key, fingerprint, p);
        if (early.isPresent()) {
            return early.get();
        }
        long start = filter.start();
        Outcome<StoredResponse> outcome = null;
        try {
            outcome = delegate.execute(request, key, fingerprint, policy, handler);
        } finally {
            // Reached with an outcome only once the delegate made it durable: a failed commit throws.
            filter.after(key, fingerprint, p, outcome, start);
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
        long start = filter.start();
        CompletionStage<Outcome<StoredResponse>> outcome;
        try {
            outcome = delegate.executeAsync(request, key, fingerprint, policy, handler);
        } catch (RuntimeException | Error e) {
            filter.after(key, fingerprint, p, null, start);
            throw e;
        }
        return outcome.whenComplete((done, failure) -> filter.after(key, fingerprint, p, done, start));
    }

    /** The answer the fast path gives without the delegate, if it has one; the blocking fast path answers at once. */
    private Optional<Outcome<StoredResponse>> early(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy p) {
        return filter.early(key, fingerprint, p).toCompletableFuture().join();
    }

    @Override
    public boolean isAsyncSupported() {
        return delegate.isAsyncSupported();
    }

    @Override
    public boolean isAsyncSupported(HttpServletRequest request) {
        return delegate.isAsyncSupported(request);
    }

    @Override
    public String toString() {
        return "FastFilterExecutor[fastPath=" + fastPath.name() + ", replayTtl=" + replayTtl + ", localReplays="
                + filter.localMaxBytes() + " bytes for " + filter.localTtl() + ", delegate=" + delegate
                + "]";
    }

    /** Builds a {@link FastFilterExecutor}; each value may be set once. */
    public static final class Builder extends FastPathFilter.Builder<Builder> {
        private final IdempotentExecutor delegate;
        private final FastPath fastPath;
        private final RetrySafe engine;

        private Builder(IdempotentExecutor delegate, FastPath fastPath, RetrySafe engine) {
            super(delegate, delegate instanceof FastFilterExecutor, fastPath, engine);
            this.delegate = delegate;
            this.fastPath = fastPath;
            this.engine = engine;
        }

        public FastFilterExecutor build() {
            return new FastFilterExecutor(this, replayTtl(), nanoTime(), this::withLocalReplays);
        }
    }
}
