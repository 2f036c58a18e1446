package io.retrysafe.servlet;

import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.http.Admission;
import io.retrysafe.http.Admissions;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collections;

/**
 * A phased operation behind a servlet request (a controller or servlet whose work calls another service),
 * decided as {@link RetrySafeFilter} decides its routes: the {@code Idempotency-Key} read by the same rules,
 * scoped to the caller, the request fingerprinted for its route, and every refusal and failure answered with
 * the filter's problems ({@link Admissions}, {@link HttpSemantics#answer}). The filter must not also protect the
 * route: the phased engine claims the key itself.
 *
 * <pre>{@code
 * PhasedRequests<Connection> checkouts = PhasedRequests.of(phased, ROUTE, keyRules, ScopeResolver.principal());
 * Admission admission = checkouts.admit(request, body);
 * if (admission instanceof Admission.Refused refused) {
 *     return refused.answer();
 * }
 * return checkouts.execute((Admission.Admitted) admission, checkout, input);
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class PhasedRequests<C> {
    private final PhasedRetrySafe<C> phased;
    private final Admissions admissions;
    private final ScopeResolver scope;

    private PhasedRequests(PhasedRetrySafe<C> phased, HttpRoute route, KeyRules keyRules, ScopeResolver scope) {
        this.phased = phased;
        this.admissions = Admissions.of(route, keyRules, phased.engine().listener());
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

    /** Reads the request's key and caller and fingerprints {@code body} (its bytes as received), claiming nothing. */
    public Admission admit(HttpServletRequest request, byte[] body) {
        Require.notNull(request, "request");
        Require.notNull(body, "body");
        return admissions.admit(Collections.list(request.getHeaders(HttpSemantics.KEY_HEADER)), scope.resolve(request),
                request.getMethod(), request.getRequestURI(), request.getQueryString(),
                name -> Collections.list(request.getHeaders(name)), request.getContentType(), body);
    }

    /**
     * Runs {@code operation} for the admitted request and answers as the filter does: the operation's answer as it
     * is stored ({@link PhasedOperation#answer()}), a replay of it with {@code Idempotent-Replayed: true}, the
     * filter's problems for a request in flight ({@code 409}), a key reused ({@code 422}), the store unavailable
     * or the outcome unknown ({@code 503}). An exception of the operation's own propagates, its key released.
     */
    public <I, T> HttpAnswer execute(Admission.Admitted admitted, PhasedOperation<I, T, C> operation, I input) {
        Require.notNull(admitted, "admitted");
        Require.notNull(operation, "operation");
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
        return HttpSemantics.answer(outcome, operation.answer());
    }

    /** Writes {@code answer} as the whole response, as the filter writes its own. */
    public static void send(HttpServletResponse response, HttpAnswer answer) throws IOException {
        Answers.send(response, answer);
    }

    @Override
    public String toString() {
        return "PhasedRequests[" + admissions.route() + ", " + phased + "]";
    }
}
