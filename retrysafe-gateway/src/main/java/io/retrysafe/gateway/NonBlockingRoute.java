package io.retrysafe.gateway;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Attempt;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpForms;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * A protected route on the non-blocking path: the request is fingerprinted, claimed, forwarded and recorded, and its
 * answer written, with no request thread waiting for it, each step run by the thread the one before it ended on (the
 * server's selector, the store client's or the pool thread that made a blocking store's call, the HTTP client's).
 * The decisions are the servlet filter's, made by the same {@link HttpSemantics}: a client gets the same answers
 * whichever path its request takes, and a retry may take the other one.
 *
 * <p>Only a request this path answers the usual way comes here: with a key that keeps the rules, a caller, and a body
 * within the bound that is not multipart. Every other one (a refusal, a request without a key) goes on to the servlet
 * filter, which answers it.
 */
final class NonBlockingRoute {
    private static final System.Logger LOG = System.getLogger(NonBlockingRoute.class.getName());

    private final IdempotentRoute route;
    private final HttpIdempotency http;
    private final AsyncRetrySafe engine;

    /** @param engine the route's engine, with its policy */
    NonBlockingRoute(IdempotentRoute route, HttpIdempotency http, AsyncRetrySafe engine) {
        this.route = route;
        this.http = http;
        this.engine = engine;
    }

    int maxResponseBytes() {
        return http.maxResponseBytes();
    }

    Set<String> replayedHeaders() {
        return http.replayedHeaders();
    }

    /**
     * The key of a request this path takes, or null when it goes on to the servlet filter: no key or one that breaks a
     * rule, no caller to scope it to, a body over the bound (of {@code length}, -1 for none) or multipart.
     */
    IdempotencyKey key(HttpFields headers, Routes.Forward forward, long length) {
        List<String> keyHeaders = headers.getValuesList(HttpIdempotency.HEADER);
        if (keyHeaders.isEmpty() || forward.scope() == null || length > http.maxRequestBytes()
                || HttpForms.isMultipart(headers.get(HttpHeader.CONTENT_TYPE))) {
            return null;
        }
        try {
            return http.keyRules().key(HttpSemantics.scope(forward.scope(), route.route()),
                    http.keyRules().parseHeader(keyHeaders));
        } catch (InvalidKeyException | IllegalArgumentException e) {
            return null;
        }
    }

    /**
     * Runs the request under {@code key}: its answer is held back until its outcome is recorded, then written; a retry
     * gets the stored answer, a duplicate in flight or another request of the key its problem.
     *
     * @param body the body as read (empty when none)
     * @param forwarder the exchange with the upstream for an attempt, not sent yet
     */
    void run(Request request, Response response, Callback callback, Routes.Forward forward, IdempotencyKey key,
            byte[] body, Function<Attempt, HeldAnswer> forwarder, Deadlines deadlines) {
        HttpFields headers = request.getHeaders();
        String contentType = headers.get(HttpHeader.CONTENT_TYPE);
        String query = request.getHttpURI().getQuery();
        Fingerprint fingerprint;
        try {
            // The body is forwarded as sent: a form's fields are parsed from its bytes for the fingerprint.
            fingerprint = HttpSemantics.fingerprint(route.route(), forward.method(),
                    HttpPaths.normalise(forward.path()), query, headers::getValuesList, contentType,
                    HttpForms.fingerprinted(query, body, contentType));
        } catch (HttpForms.MalformedFormException e) {
            NonBlockingForwarder.write(response, callback, ProblemType.MALFORMED_FORM.answer(e.getMessage(), null,
                    null));
            return;
        } catch (MalformedJsonException e) {
            NonBlockingForwarder.write(response, callback, ProblemType.MALFORMED_JSON.answer(e.getMessage(), null,
                    null));
            return;
        }
        AtomicReference<HeldAnswer> held = new AtomicReference<>();
        engine.oncePerInstance(key, fingerprint, engine.policy().waitForResult(),
                () -> engine.execute(key, fingerprint, ResponseCodec.identity(), attempt -> {
                    HeldAnswer answer = forwarder.apply(attempt);
                    held.set(answer);
                    answer.send(deadlines);
                    return answer.recorded();
                }))
                .whenComplete((outcome, failure) -> answer(request, response, callback, key, held.get(), outcome,
                        failure));
    }

    private static void answer(Request request, Response response, Callback callback, IdempotencyKey key,
            HeldAnswer held, Outcome<StoredResponse> outcome, Throwable failure) {
        if (failure == null) {
            HttpAnswer refusal = HttpSemantics.refusal(outcome);
            if (refusal != null) {
                NonBlockingForwarder.write(response, callback, refusal);
            } else {
                held.send(callback);
            }
            return;
        }
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        if (held != null && held.isCommitted()) {
            // Part of an answer over the bound went out as it came: too late for a problem; the connection is cut.
            callback.failed(cause);
            return;
        }
        HttpAnswer problem = HttpSemantics.failure(cause);
        if (problem == null) {
            Response.writeError(request, response, callback, cause);
            return;
        }
        // Outcome unknown (the key stays in progress), or not recorded: the held-back answer must not go out as a
        // success.
        LOG.log(Level.WARNING, () -> "key " + key.digest() + ": answering " + problem.status() + ": "
                + cause.getMessage());
        response.reset();
        NonBlockingForwarder.write(response, callback, problem);
    }
}
