package io.retrysafe.webflux;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.OperationFailedException;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpForms.MalformedFormException;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.ContextView;

/**
 * The servlet filter's Idempotency-Key semantics for Spring WebFlux, on the non-blocking engine: the
 * same problems (RFC 9457), headers ({@code Idempotent-Replayed}, {@code Retry-After}), scopes, routes,
 * fingerprint and limits, decided by {@link HttpSemantics}. The request body is read, up to
 * {@code maxRequestBytes}, before the handler runs; the handler's response is held back, up to
 * {@code maxResponseBytes}, until its outcome is stored, then sent; a larger body is sent as it is written
 * and stored without it, as the servlet filter does. No thread waits for the store.
 *
 * <p>An exchange cancelled while its handler runs (the client went away) stores nothing: the
 * handler's subscription is cancelled and the key released, so a retry runs it again.
 *
 * <p>The mode is the executor's: standalone on an engine ({@link ReactiveIdempotentExecutor#standalone}),
 * or transactional ({@link R2dbcTransactionalExecutor}: the key, the handler's R2DBC writes and the
 * response in one transaction). The handler is subscribed in the executor's Reactor context, which
 * carries the exchange's.
 */
public final class RetrySafeWebFilter implements WebFilter {
    /**
     * Set on an exchange the filter protects, before it answers or runs the handler: the pattern of its route, as
     * declared. An answer the filter gives itself (a replay, a refusal) was matched to no handler by the framework,
     * so metrics that tag an exchange by its handler's pattern find none there; they can take this one. Spring's
     * own {@code http.server.requests} observation is given it by the filter.
     */
    public static final String ROUTE_ATTRIBUTE = RetrySafeWebFilter.class.getName() + ".route";

    private final WebFluxIdempotency config;
    private final RetrySafeListener listener;
    private final ReactiveIdempotentExecutor executor;

    /** Standalone mode on {@code engine}. */
    public RetrySafeWebFilter(WebFluxIdempotency config, AsyncRetrySafe engine) {
        this(config, ReactiveIdempotentExecutor.standalone(engine), Require.notNull(engine, "engine").listener());
    }

    /**
     * The mode {@code executor} runs requests in, for example transactional mode:
     * {@code new RetrySafeWebFilter(config, new R2dbcTransactionalExecutor(…), engine.listener())}.
     *
     * @param listener hears the keys refused before the executor runs (the engine's listener)
     */
    public RetrySafeWebFilter(WebFluxIdempotency config, ReactiveIdempotentExecutor executor,
            RetrySafeListener listener) {
        this.config = Require.notNull(config, "config");
        this.executor = Require.notNull(executor, "executor");
        this.listener = Require.notNull(listener, "listener");
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        ServerHttpRequest request = exchange.getRequest();
        String path = HttpPaths.normalise(request.getPath().pathWithinApplication().value());
        HttpRoute route = config.route(request.getMethod().name(), path);
        if (route == null) {
            return chain.filter(exchange);
        }
        List<String> keyHeaders = values(request.getHeaders(), HttpSemantics.KEY_HEADER);
        if (keyHeaders.isEmpty() && !route.keyRequired()) {
            return chain.filter(exchange);
        }
        exchange.getAttributes().put(ROUTE_ATTRIBUTE, route.pattern());
        // Before the end reaches Spring's observation of the exchange, which is stopped after the filter chain.
        return protectKeyed(exchange, chain, route, path, keyHeaders)
                .doOnTerminate(() -> tagRoute(exchange, route.pattern()));
    }

    /**
     * Gives Spring's {@code http.server.requests} observation the route's pattern when no handler gave it one: an
     * answer the filter gave itself (a replay, a refusal) was matched to no handler, and would be tagged
     * {@code uri="UNKNOWN"}, apart from the route's other requests. A handler's own pattern is kept.
     */
    private static void tagRoute(ServerWebExchange exchange, String pattern) {
        ServerRequestObservationContext.findCurrent(exchange.getAttributes()).ifPresent(context -> {
            if (context.getPathPattern() == null) {
                context.setPathPattern(pattern);
            }
        });
    }

    private Mono<Void> protectKeyed(ServerWebExchange exchange, WebFilterChain chain, HttpRoute route, String path,
            List<String> keyHeaders) {
        String keyValue;
        try {
            keyValue = config.keyRules().parseHeader(keyHeaders);
        } catch (InvalidKeyException e) {
            listener.onInvalidKey(e);
            return refuseUnread(exchange, HttpSemantics.keyRefused(e));
        }
        return config.scope().resolve(exchange)
                .map(principal -> {
                    try {
                        return config.keyRules().key(HttpSemantics.scope(principal, route), keyValue);
                    } catch (IllegalArgumentException e) {
                        throw new CallerCannotScope(e);
                    }
                })
                .flatMap(key -> protect(exchange, chain, route, path, key))
                .onErrorResume(CallerCannotScope.class, e -> refuseUnread(exchange,
                        ProblemType.UNAUTHENTICATED.answer("the caller's identity cannot scope a key: "
                                + e.getCause().getMessage(), null, null)).then(Mono.just(true)))
                .switchIfEmpty(Mono.defer(() -> refuseUnread(exchange, HttpSemantics.noCaller())
                        .then(Mono.just(true))))
                .then();
    }

    private Mono<Boolean> protect(ServerWebExchange exchange, WebFilterChain chain, HttpRoute route, String path,
            IdempotencyKey key) {
        ServerHttpRequest request = exchange.getRequest();
        int max = config.maxRequestBytes();
        long declared = request.getHeaders().getContentLength();
        if (declared > max) {
            return refuseUnread(exchange, HttpSemantics.tooLarge(max, declared)).thenReturn(true);
        }
        // Read before the handler, never more than the bound: a longer body is refused as it passes it.
        return DataBufferUtils.join(request.getBody(), max)
                .map(buffer -> Optional.of(FingerprintedBody.bytes(buffer)))
                .defaultIfEmpty(Optional.of(new byte[0]))
                .onErrorResume(DataBufferLimitException.class, e -> Mono.just(Optional.empty()))
                .flatMap(body -> body.isEmpty() ? refuseUnread(exchange, HttpSemantics.tooLarge(max, -1))
                        : FingerprintedBody.of(new HeldBackBody(request, body.get()), body.get(), max)
                                .flatMap(fingerprinted -> run(exchange, chain, route, path, key, body.get(),
                                        fingerprinted))
                                .onErrorResume(MalformedFormException.class, e -> send(exchange.getResponse(),
                                        ProblemType.MALFORMED_FORM.answer(e.getMessage(), null, null))))
                .thenReturn(true);
    }

    private Mono<Void> run(ServerWebExchange exchange, WebFilterChain chain, HttpRoute route, String path,
            IdempotencyKey key, byte[] body, FingerprintedBody fingerprinted) {
        ServerHttpRequest request = exchange.getRequest();
        Fingerprint fingerprint;
        try {
            fingerprint = HttpSemantics.fingerprint(route, request.getMethod().name(), path,
                    request.getURI().getRawQuery(), name -> values(request.getHeaders(), name),
                    fingerprinted.contentType(), fingerprinted.body());
        } catch (MalformedJsonException e) {
            return send(exchange.getResponse(), ProblemType.MALFORMED_JSON.answer(e.getMessage(), null, null));
        }
        HeldBackResponse held = new HeldBackResponse(exchange.getResponse(), config.maxResponseBytes());
        ServerWebExchange handled = new HeldBackExchange(exchange, new HeldBackBody(request, body), held,
                config.maxRequestBytes());
        Handler handler = new Handler(chain.filter(handled)
                .then(Mono.fromSupplier(() -> held.toStored(config.replayedHeaders()))));
        return executor.execute(handled, key, fingerprint, route.policy().orElse(null), handler.run())
                .flatMap(done -> {
                    HttpAnswer refusal = HttpSemantics.refusal(done);
                    return refusal == null ? held.send() : send(exchange.getResponse(), refusal);
                })
                // A body past the bound went out as it was written: too late for a problem; the connection is cut.
                .onErrorResume(failure -> held.isStreamed() ? Mono.error(failure)
                        : answerFailure(exchange.getResponse(), failure))
                .doOnCancel(handler::cancel);
    }

    /**
     * The handler's work, subscribed in the Reactor context of whoever runs it (a transaction's, which
     * the exchange's is part of), and cancelled with the exchange: its run then fails, so the engine
     * sees the attempt fail and releases the key (or rolls its transaction back). Cancelled before it
     * starts, it does not start.
     */
    private static final class Handler {
        private final Mono<StoredResponse> work;
        private CompletableFuture<StoredResponse> running;
        private boolean cancelled;

        Handler(Mono<StoredResponse> work) {
            this.work = work;
        }

        /** The run the executor subscribes, once. */
        Mono<StoredResponse> run() {
            return Mono.deferContextual(context -> Mono.fromFuture(start(context), true));
        }

        private synchronized CompletableFuture<StoredResponse> start(ContextView context) {
            running = cancelled ? CompletableFuture.failedFuture(new CancellationException("the exchange was "
                    + "cancelled before its handler ran")) : work.contextWrite(context).toFuture();
            return running;
        }

        synchronized void cancel() {
            cancelled = true;
            if (running != null) {
                running.cancel(true);
            }
        }
    }

    /** The engine failed the call: its problem, or, for the handler's own failure, that failure again. */
    private static Mono<Void> answerFailure(ServerHttpResponse response, Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        HttpAnswer problem = HttpSemantics.failure(cause);
        if (problem != null) {
            return reset(response).then(send(response, problem));
        }
        return Mono.error(cause instanceof OperationFailedException e ? e.getCause() : cause);
    }

    /** What the handler set on the response is not part of a problem sent instead. */
    private static Mono<Void> reset(ServerHttpResponse response) {
        response.getHeaders().clear();
        return Mono.empty();
    }

    /**
     * {@code answer} to a request refused before its body was read to the end, with {@code Connection: close} when
     * it declares one: the server would otherwise read the rest of a body nobody wants (any length the client
     * declared) before the connection's next request. Then it lingers: what the client goes on sending of the body
     * is read and discarded, within {@link HttpSemantics#LINGER} and {@link HttpSemantics#LINGER_BYTES}, before the
     * connection closes. Closed with the body still arriving, it would be reset, and the reset discards what the
     * client had not read yet of the answer.
     */
    private static Mono<Void> refuseUnread(ServerWebExchange exchange, HttpAnswer answer) {
        HttpHeaders headers = exchange.getRequest().getHeaders();
        long length = headers.getContentLength();
        String transferEncoding = headers.getFirst(HttpHeaders.TRANSFER_ENCODING);
        HttpAnswer refusal = HttpSemantics.unreadBody(answer, length, transferEncoding);
        if (!HttpSemantics.closesUnreadBody(length, transferEncoding) || refusal.body().length == 0) {
            return send(exchange.getResponse(), refusal);
        }
        // The answer is written whole, and its response ends only after the lingering: Reactor Netty stops reading
        // a body, and closes the connection, once the response has ended.
        ServerHttpResponse response = head(exchange.getResponse(), refusal);
        return response.writeWith(Flux.concat(Mono.fromSupplier(() -> response.bufferFactory().wrap(refusal.body())),
                linger(exchange.getRequest()).then(Mono.empty())));
    }

    /** Reads and discards the rest of a refused body, within the lingering's bounds. */
    private static Mono<Void> linger(ServerHttpRequest request) {
        AtomicLong left = new AtomicLong(HttpSemantics.LINGER_BYTES);
        return request.getBody()
                .map(buffer -> {
                    int read = buffer.readableByteCount();
                    DataBufferUtils.release(buffer);
                    return read;
                })
                .takeUntil(read -> left.addAndGet(-read) <= 0)
                .then()
                .timeout(HttpSemantics.LINGER, Mono.empty())
                .onErrorResume(e -> Mono.empty());
    }

    static Mono<Void> send(ServerHttpResponse response, HttpAnswer answer) {
        byte[] body = answer.body();
        head(response, answer);
        return body.length == 0 ? response.setComplete()
                : response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }

    /** {@code response} with the answer's status, headers and length set. */
    private static ServerHttpResponse head(ServerHttpResponse response, HttpAnswer answer) {
        response.setStatusCode(HttpStatusCode.valueOf(answer.status()));
        answer.headers().forEach((name, values) -> response.getHeaders().put(name, values));
        response.getHeaders().setContentLength(answer.body().length);
        return response;
    }

    /**
     * Every value of a header, as sent. Read through {@code forEach}, which Spring Framework 6.2 (Boot 3.5) and 7
     * both have with one signature: {@code getOrEmpty} and {@code get} take an {@code Object} on 6.2 and a
     * {@code String} on 7, so a call compiled against one fails on the other. The headers of every server
     * adapter match names regardless of case, so the first name that matches holds all the values.
     */
    static List<String> values(HttpHeaders headers, String name) {
        List<List<String>> found = new ArrayList<>(1);
        headers.forEach((n, values) -> {
            if (found.isEmpty() && n.equalsIgnoreCase(name)) {
                found.add(values);
            }
        });
        return found.isEmpty() ? List.of() : found.get(0);
    }

    /** The request with its body already read: the handler reads the same bytes again. */
    private static final class HeldBackBody extends ServerHttpRequestDecorator {
        private final byte[] body;

        HeldBackBody(ServerHttpRequest delegate, byte[] body) {
            super(delegate);
            this.body = body;
        }

        @Override
        public Flux<DataBuffer> getBody() {
            return Flux.defer(() -> Flux.just(DefaultDataBufferFactory.sharedInstance.wrap(body)));
        }
    }

    /** The caller's identity is not one a key can be scoped to. */
    private static final class CallerCannotScope extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CallerCannotScope(IllegalArgumentException cause) {
            super(cause);
        }
    }
}
