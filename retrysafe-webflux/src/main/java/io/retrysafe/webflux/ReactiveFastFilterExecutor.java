package io.retrysafe.webflux;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.FastPathFilter;
import io.retrysafe.spi.AsyncFastPath;
import java.time.Duration;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * An {@link AsyncFastPath} (Redis, {@code RedisFastFilter.async()}) in front of another executor: what
 * the fast path already knows is answered without the store, everything else goes to the delegate, which
 * stays the source of truth. The decisions are the servlet {@code FastFilterExecutor}'s, made by the same
 * code, with no thread waiting for Redis.
 *
 * <pre>{@code
 * ReactiveIdempotentExecutor executor = ReactiveFastFilterExecutor.builder(
 *         ReactiveIdempotentExecutor.standalone(engine),      // the store decides
 *         RedisFastFilter.builder(redisClient).build().async(), // Redis answers early
 *         engine).build();
 * WebFilter filter = new RetrySafeWebFilter(config, executor, engine.listener());
 * }</pre>
 *
 * <ol>
 * <li>lookup: a cached response with the same fingerprint is replayed, one with another fingerprint is
 * refused (422), an in-flight marker answers 409 with the policy's {@code Retry-After}; none of them asks
 * the store or runs the delegate;
 * <li>miss: the in-flight marker is set ({@code SET NX}), then the delegate runs and its store claims the
 * key as it always does; if the key already held something, a second lookup says what: a marker is 409,
 * a response is replayed (or 422);
 * <li>once the delegate's outcome is durable (stored, or committed in transactional mode): a stored
 * result, or a replay the delegate found, is published to the fast path before the answer is sent;
 * anything else (released, refused, failed, a failed commit, a cancelled exchange) clears the marker.
 * </ol>
 *
 * A published response lives for what is left of the retention, at most {@link Builder#replayTtl}. The
 * fast path never fails a request: a failure of Redis (or a bug) is logged and taken as a miss.
 */
public final class ReactiveFastFilterExecutor implements ReactiveIdempotentExecutor {
    /** The longest a published response lives in the fast path (bounds memory and a warmed entry's overshoot). */
    public static final Duration DEFAULT_REPLAY_TTL = FastPathFilter.DEFAULT_REPLAY_TTL;

    private final ReactiveIdempotentExecutor delegate;
    private final AsyncFastPath fastPath;
    private final AsyncRetrySafe engine;
    private final Duration replayTtl;
    private final FastPathFilter filter;

    private ReactiveFastFilterExecutor(Builder b, Duration replayTtl, LongSupplier nanoTime,
            UnaryOperator<FastPathFilter> local) {
        this.delegate = b.delegate;
        this.fastPath = b.fastPath;
        this.engine = b.engine;
        this.replayTtl = replayTtl;
        this.filter = local.apply(FastPathFilter.of(fastPath, engine.name(), engine.listener(), replayTtl, nanoTime));
    }

    /**
     * @param delegate the executor that decides (standalone, or transactional)
     * @param fastPath what answers early ({@code RedisFastFilter.async()})
     * @param engine the delegate's engine: its policy (retention, {@code Retry-After}) applies to routes
     *     without their own, and its listener hears the outcomes answered from the fast path
     */
    public static Builder builder(ReactiveIdempotentExecutor delegate, AsyncFastPath fastPath, AsyncRetrySafe engine) {
        return new Builder(delegate, fastPath, engine);
    }

    public ReactiveIdempotentExecutor delegate() {
        return delegate;
    }

    public AsyncFastPath fastPath() {
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
    public Mono<Outcome<StoredResponse>> execute(ServerWebExchange exchange, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Mono<StoredResponse> handler) {
        OperationPolicy p = policy == null ? engine.policy() : policy;
        return Mono.fromCompletionStage(() -> filter.early(key, fingerprint, p)).flatMap(early -> {
            if (early.isPresent()) {
                return Mono.just(early.get());
            }
            long start = filter.start();
            // Told once the delegate's outcome is durable (it emits only then), and on any failure or cancel.
            return delegate.execute(exchange, key, fingerprint, policy, handler)
                    .flatMap(outcome -> Mono.fromCompletionStage(() -> filter.after(key, fingerprint, p, outcome,
                            start)).thenReturn(outcome))
                    .onErrorResume(failure -> Mono.fromCompletionStage(() -> filter.after(key, fingerprint, p, null,
                            start)).then(Mono.error(failure)))
                    .doOnCancel(() -> filter.after(key, fingerprint, p, null, start));
        });
    }

    @Override
    public String toString() {
        return "ReactiveFastFilterExecutor[fastPath=" + fastPath.name() + ", replayTtl=" + replayTtl + ", localReplays="
                + filter.localMaxBytes() + " bytes for " + filter.localTtl() + ", delegate="
                + delegate + "]";
    }

    /** Builds a {@link ReactiveFastFilterExecutor}; each value may be set once. */
    public static final class Builder extends FastPathFilter.Builder<Builder> {
        private final ReactiveIdempotentExecutor delegate;
        private final AsyncFastPath fastPath;
        private final AsyncRetrySafe engine;

        private Builder(ReactiveIdempotentExecutor delegate, AsyncFastPath fastPath, AsyncRetrySafe engine) {
            super(delegate, delegate instanceof ReactiveFastFilterExecutor, fastPath, engine);
            this.delegate = delegate;
            this.fastPath = fastPath;
            this.engine = engine;
        }

        public ReactiveFastFilterExecutor build() {
            return new ReactiveFastFilterExecutor(this, replayTtl(), nanoTime(), this::withLocalReplays);
        }
    }
}
