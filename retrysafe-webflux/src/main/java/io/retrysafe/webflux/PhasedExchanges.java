package io.retrysafe.webflux;

import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.KeyRules;
import io.retrysafe.PhasedOperation;
import io.retrysafe.http.Admission;
import io.retrysafe.http.Admissions;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * A phased operation behind a WebFlux handler (a controller or handler function whose work calls another
 * service), decided as {@link RetrySafeWebFilter} decides its routes: the {@code Idempotency-Key} read by the same
 * rules, scoped to the caller the exchange carries, the request fingerprinted for its route, and every refusal and
 * failure answered with the filter's problems ({@link Admissions}, {@link HttpSemantics#answer}). The filter must
 * not also protect the route: the phased engine claims the key itself. No thread waits for the store or a step.
 *
 * <pre>{@code
 * PhasedExchanges<Connection> checkouts = PhasedExchanges.of(phased, ROUTE, keyRules, ReactiveScopeResolver.principal());
 * Mono<HttpAnswer> answer = checkouts.admit(exchange, body).flatMap(admission ->
 *         admission instanceof Admission.Admitted admitted ? checkouts.execute(admitted, checkout, input)
 *                 : Mono.just(((Admission.Refused) admission).answer()));
 * return answer.flatMap(a -> PhasedExchanges.send(exchange.getResponse(), a));
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param <C> what the operation's local steps are given to reach their transaction (an R2DBC {@code Connection})
 */
public final class PhasedExchanges<C> {
    private final AsyncPhasedRetrySafe<C> phased;
    private final Admissions admissions;
    private final ReactiveScopeResolver scope;

    private PhasedExchanges(AsyncPhasedRetrySafe<C> phased, HttpRoute route, KeyRules keyRules,
            ReactiveScopeResolver scope) {
        this.phased = phased;
        this.admissions = Admissions.of(route, keyRules, phased.engine().listener());
        this.scope = scope;
    }

    /**
     * @param route the route as the filter would configure it: whether the key is required, the JSON members
     *     the fingerprint covers, the retention
     */
    public static <C> PhasedExchanges<C> of(AsyncPhasedRetrySafe<C> phased, HttpRoute route, KeyRules keyRules,
            ReactiveScopeResolver scope) {
        return new PhasedExchanges<>(Require.notNull(phased, "phased"), Require.notNull(route, "route"),
                Require.notNull(keyRules, "keyRules"), Require.notNull(scope, "scope"));
    }

    /**
     * Reads the request's key, resolves its caller and fingerprints {@code body} (its bytes as received), claiming
     * nothing.
     */
    public Mono<Admission> admit(ServerWebExchange exchange, byte[] body) {
        Require.notNull(exchange, "exchange");
        Require.notNull(body, "body");
        ServerHttpRequest request = exchange.getRequest();
        HttpHeaders headers = request.getHeaders();
        return scope.resolve(exchange).map(Optional::of).defaultIfEmpty(Optional.empty())
                .map(caller -> admissions.admit(RetrySafeWebFilter.values(headers, HttpSemantics.KEY_HEADER),
                        caller.orElse(null), request.getMethod().name(), request.getPath().pathWithinApplication()
                                .value(), request.getURI().getRawQuery(), name -> RetrySafeWebFilter.values(headers, name),
                        headers.getFirst(HttpHeaders.CONTENT_TYPE), body));
    }

    /**
     * Runs {@code operation} for the admitted request and answers as the filter does: the operation's answer as it
     * is stored ({@link PhasedOperation#answer()}), a replay of it with {@code Idempotent-Replayed: true}, the
     * filter's problems for a request in flight ({@code 409}), a key reused ({@code 422}), the store unavailable
     * or the outcome unknown ({@code 503}). A failure of the operation's own is the returned Mono's, its key
     * released and its saved steps kept for the retry. Cancelling the Mono (the client went away) does not stop
     * the operation: it ends its step, and a retry or the completer resumes it.
     */
    public <I, T> Mono<HttpAnswer> execute(Admission.Admitted admitted, AsyncPhasedOperation<I, T, C> operation,
            I input) {
        Require.notNull(admitted, "admitted");
        Require.notNull(operation, "operation");
        return Mono.defer(() -> Mono.fromFuture(phased.execute(admitted.key(), admitted.fingerprint(), operation,
                        input).toCompletableFuture(), true))
                .map(outcome -> HttpSemantics.answer(outcome, operation.answer()))
                .onErrorResume(failure -> {
                    Throwable cause = failure;
                    while (cause instanceof CompletionException && cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    HttpAnswer answer = HttpSemantics.failure(cause);
                    return answer == null ? Mono.error(cause) : Mono.just(answer);
                });
    }

    /** Writes {@code answer} as the whole response, as the filter writes its own. */
    public static Mono<Void> send(ServerHttpResponse response, HttpAnswer answer) {
        return RetrySafeWebFilter.send(Require.notNull(response, "response"), Require.notNull(answer, "answer"));
    }

    @Override
    public String toString() {
        return "PhasedExchanges[" + admissions.route() + ", " + phased + "]";
    }
}
