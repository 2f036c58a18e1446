package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.Fingerprinter;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.Outcome;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.internal.Require;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collections;

/**
 * A phased operation behind a servlet request (a controller or servlet whose work calls another service),
 * decided as {@link RetrySafeFilter} decides its routes: the {@code Idempotency-Key} read by the same rules,
 * scoped to the caller, the request fingerprinted for its route, and every refusal and failure answered with
 * the filter's problems. The filter must not also protect the route: the phased engine claims the key itself.
 *
 * <pre>{@code
 * PhasedRequests<Connection> checkouts = PhasedRequests.of(phased, ROUTE, keyRules, ScopeResolver.principal());
 * PhasedRequests.Admission admission = checkouts.admit(request, body);
 * if (admission instanceof PhasedRequests.Admission.Refused refused) {
 *     return refused.answer();
 * }
 * return checkouts.execute((PhasedRequests.Admission.Admitted) admission, checkout, input);
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class PhasedRequests<C> {
    private final PhasedRetrySafe<C> phased;
    private final HttpRoute route;
    private final Fingerprinter fingerprinter;
    private final KeyRules keyRules;
    private final ScopeResolver scope;

    private PhasedRequests(PhasedRetrySafe<C> phased, HttpRoute route, KeyRules keyRules, ScopeResolver scope) {
        this.phased = phased;
        this.route = route;
        this.fingerprinter = HttpSemantics.fingerprinter(route);
        this.keyRules = keyRules;
        this.scope = scope;
    }

    /**
     * @param route the route as the filter would configure it: whether the key is required, the JSON members
     *     the fingerprint covers, the retention
     */
    public static <C> PhasedRequests<C> of(PhasedRetrySafe<C> phased, HttpRoute route, KeyRules keyRules,
            ScopeResolver scope) {
        return new PhasedRequests<>(Require.notNull(phased, "phased"), Require.notNull(route, "route"),
                Require.notNull(keyRules, "keyRules"), Require.notNull(scope, "scope"));
    }

    /** What a request is to the operation: admitted with its key and fingerprint, or refused with its answer. */
    public sealed interface Admission {
        /** The key, scoped to the caller, and the request's fingerprint. */
        record Admitted(IdempotencyKey key, Fingerprint fingerprint) implements Admission {
        }

        /** A missing or malformed key ({@code 400}), no caller ({@code 401}), a body that is not JSON ({@code 400}). */
        record Refused(HttpAnswer answer) implements Admission {
        }
    }

    /** Reads the request's key and caller and fingerprints {@code body} (its bytes as received), claiming nothing. */
    public Admission admit(HttpServletRequest request, byte[] body) {
        Require.notNull(request, "request");
        Require.notNull(body, "body");
        String keyValue;
        try {
            keyValue = keyRules.parseHeader(Collections.list(request.getHeaders(HttpSemantics.KEY_HEADER)));
        } catch (InvalidKeyException e) {
            phased.engine().listener().onInvalidKey(e);
            return new Admission.Refused(HttpSemantics.keyRefused(e));
        }
        String caller = scope.resolve(request);
        if (caller == null) {
            return new Admission.Refused(HttpSemantics.noCaller());
        }
        try {
            Fingerprint fingerprint = HttpSemantics.fingerprint(route, fingerprinter, request.getMethod(),
                    HttpPaths.normalise(request.getRequestURI()), request.getQueryString(),
                    name -> Collections.list(request.getHeaders(name)), request.getContentType(), body);
            return new Admission.Admitted(keyRules.key(HttpSemantics.scope(caller, route), keyValue), fingerprint);
        } catch (MalformedJsonException e) {
            return new Admission.Refused(ProblemType.MALFORMED_JSON.answer("the body is not JSON: " + e.getMessage(),
                    null, null));
        }
    }

    /**
     * Runs {@code operation} for the admitted request and answers as the filter does: the operation's answer as it
     * is stored ({@link PhasedOperation#answer()}), a replay of it with {@code Idempotent-Replayed: true}, the
     * filter's problems for a request in flight ({@code 409}), a key reused ({@code 422}), the store unavailable
     * or the outcome unknown ({@code 503}). An exception of the operation's own propagates, its key released.
     */
    public <I, T> HttpAnswer execute(Admission.Admitted admitted, PhasedOperation<I, T, C> operation, I input) {
        Require.notNull(admitted, "admitted");
        Outcome<T> outcome;
        try {
            outcome = phased.execute(admitted.key(), admitted.fingerprint(), operation, input);
        } catch (RuntimeException e) {
            HttpAnswer failure = HttpSemantics.failure(e);
            if (failure == null) {
                throw e;
            }
            return failure;
        }
        if (outcome instanceof Outcome.Executed<T> executed) {
            return answer(operation.answer().encode(executed.value()));
        } else if (outcome instanceof Outcome.Unprotected<T> unprotected) {
            return answer(operation.answer().encode(unprotected.value()));
        } else if (outcome instanceof Outcome.Replayed<T> replayed) {
            return HttpSemantics.replay(operation.answer().encode(replayed.value()));
        }
        // In progress, key reused, store unavailable: no value, so the cast carries nothing of T.
        @SuppressWarnings("unchecked")
        Outcome<StoredResponse> refused = (Outcome<StoredResponse>) (Outcome<?>) outcome;
        return HttpSemantics.refusal(refused);
    }

    /** Writes {@code answer} as the whole response, as the filter writes its own. */
    public static void send(HttpServletResponse response, HttpAnswer answer) throws IOException {
        Answers.send(response, answer);
    }

    private static HttpAnswer answer(StoredResponse stored) {
        return new HttpAnswer(stored.status(), stored.headers(), stored.body());
    }

    @Override
    public String toString() {
        return "PhasedRequests[" + route + ", " + phased + "]";
    }
}
