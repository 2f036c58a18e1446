package io.retrysafe.http;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.util.List;
import java.util.function.Function;

/**
 * The admission of requests to one route whose work a handler runs (a phased operation), decided as the filters
 * decide their routes': the key read by the key rules ({@code listener} hears a refused one), scoped to the caller
 * and the route, the request fingerprinted for the route. Each front door reads its request and resolves its
 * caller; what the request is, is decided here. Immutable and thread-safe.
 */
public final class Admissions {
    private final HttpRoute route;
    private final KeyRules keyRules;
    private final RetrySafeListener listener;

    private Admissions(HttpRoute route, KeyRules keyRules, RetrySafeListener listener) {
        this.route = route;
        this.keyRules = keyRules;
        this.listener = listener;
    }

    /**
     * @param route the route as a filter would configure it: the JSON members and headers its fingerprint covers
     * @param listener the engine's, which hears every key refused
     */
    public static Admissions of(HttpRoute route, KeyRules keyRules, RetrySafeListener listener) {
        return new Admissions(Require.notNull(route, "route"), Require.notNull(keyRules, "keyRules"),
                Require.notNull(listener, "listener"));
    }

    public HttpRoute route() {
        return route;
    }

    /**
     * Admits a request or refuses it, in the filters' order: its key, then its caller, then its body. Claims nothing.
     *
     * @param keyFieldLines the {@code Idempotency-Key} field lines as received, possibly none
     * @param caller the caller's scope as the front door's scope resolver names it, null when there is none
     * @param path the request's path within the application, as received (normalised here)
     * @param headerValues a request header's field values in order, empty when absent
     * @param body the body's bytes as received
     */
    public Admission admit(List<String> keyFieldLines, String caller, String method, String path, String query,
            Function<String, List<String>> headerValues, String contentType, byte[] body) {
        Require.notNull(body, "body");
        String keyValue;
        try {
            keyValue = keyRules.parseHeader(keyFieldLines);
        } catch (InvalidKeyException e) {
            listener.onInvalidKey(e);
            return new Admission.Refused(HttpSemantics.keyRefused(e));
        }
        if (caller == null) {
            return new Admission.Refused(HttpSemantics.noCaller());
        }
        IdempotencyKey key;
        try {
            key = keyRules.key(HttpSemantics.scope(caller, route), keyValue);
        } catch (IllegalArgumentException e) {
            return new Admission.Refused(ProblemType.UNAUTHENTICATED.answer("the caller's identity cannot scope a key: "
                    + e.getMessage(), null, null));
        }
        try {
            Fingerprint fingerprint = HttpSemantics.fingerprint(route, method, HttpPaths.normalise(path), query,
                    headerValues, contentType, body);
            return new Admission.Admitted(key, fingerprint);
        } catch (MalformedJsonException e) {
            return new Admission.Refused(ProblemType.MALFORMED_JSON.answer("the body is not JSON: " + e.getMessage(),
                    null, null));
        }
    }

    @Override
    public String toString() {
        return "Admissions[" + route + "]";
    }
}
