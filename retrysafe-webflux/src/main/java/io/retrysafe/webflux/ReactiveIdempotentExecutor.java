package io.retrysafe.webflux;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * How the WebFlux filter runs a request under its key: in standalone mode on an engine, or inside a
 * database transaction that the handler's writes join ({@link R2dbcTransactionalExecutor}). The filter
 * answers the outcome the same way in every mode.
 *
 * <p>An implementation emits the outcome only once it is durable: a failed commit must fail the
 * {@code Mono} (with a {@link io.retrysafe.StoreUnavailableException}, a {@code 503}), never emit a
 * success. It subscribes {@code handler} at most once, in the Reactor context the handler's work must
 * see (a transaction's), and that context must carry the one the returned {@code Mono} is subscribed
 * in (the exchange's: the security context, the observation). The handler's failure fails the
 * returned {@code Mono} with that failure; the filter rethrows it.
 */
@FunctionalInterface
public interface ReactiveIdempotentExecutor {

    /**
     * @param exchange the request, as the handler sees it
     * @param policy the route's policy, or null for the engine's default
     * @param handler the handler's run; its result is the response to store
     */
    Mono<Outcome<StoredResponse>> execute(ServerWebExchange exchange, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Mono<StoredResponse> handler);

    /**
     * Standalone mode: the claim commits before the handler runs, the response after, each on the
     * store's own. A duplicate of a request in flight is decided by the store; a route whose policy waits
     * for the result claims again after a scheduled pause.
     */
    static ReactiveIdempotentExecutor standalone(AsyncRetrySafe engine) {
        Require.notNull(engine, "engine");
        return (exchange, key, fingerprint, policy, handler) -> Mono.deferContextual(context -> Mono.fromFuture(
                (policy == null ? engine : engine.with(policy)).execute(key, fingerprint, ResponseCodec.identity(),
                        attempt -> handler.contextWrite(context).toFuture()).toCompletableFuture(), true));
    }
}
