package io.retrysafe.servlet;

import io.retrysafe.InvalidKeyException;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collections;

/**
 * The answer to a request on a protected route that was refused before the filter could see it: by a
 * security firewall (Spring Security's {@code StrictHttpFirewall} refuses header values outside
 * printable ASCII, path parameters, encoded slashes) or by the container's own parser (control
 * characters in a header). A client of a protected route then gets a problem document like every
 * other refusal there, never a framework's error JSON or the container's HTML page: the invalid-key
 * problem when its {@code Idempotency-Key} breaks a rule, else {@link Problem#REQUEST_REJECTED}.
 * Requests on other routes are left to whoever refused them.
 */
public final class RejectedRequests {
    private final HttpIdempotency config;
    private final RetrySafeListener listener;

    public RejectedRequests(HttpIdempotency config, RetrySafeListener listener) {
        this.config = Require.notNull(config, "config");
        this.listener = Require.notNull(listener, "listener");
    }

    /** Whether the filter protects the request's route (its method and normalised path). */
    public boolean isProtected(HttpServletRequest request) {
        return request.getMethod() != null && config.route(request.getMethod(), RequestPath.of(request)) != null;
    }

    /**
     * Answers a refused request with a problem document if it is on a protected route and its response
     * is not committed yet.
     *
     * @return whether it answered; when not, the caller answers as it would have
     */
    public boolean answer(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (response.isCommitted() || !isProtected(request)) {
            return false;
        }
        response.resetBuffer();
        Answers.send(response, HttpSemantics.rejected(config.keyRules(),
                Collections.list(request.getHeaders(HttpIdempotency.HEADER)), listener));
        return true;
    }

    /** The problem for a key that breaks a rule: missing-key or invalid-key; member {@code rule} names the rule. */
    void refuseKey(HttpServletResponse response, InvalidKeyException e) throws IOException {
        listener.onInvalidKey(e);
        Answers.send(response, HttpSemantics.keyRefused(e));
    }
}
