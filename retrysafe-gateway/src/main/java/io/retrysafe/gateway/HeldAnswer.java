package io.retrysafe.gateway;

import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.util.Callback;

/**
 * The upstream's answer to a protected request on the non-blocking path, held back until its outcome is recorded, as
 * the servlet filter holds a handler's response: an answer up to the route's {@code max-response-bytes} is collected
 * whole, whatever its framing, and written once the record is complete ({@link #send(Callback)}); a larger one goes to
 * the client as it arrives and is recorded without its body, its end written once the record is complete.
 */
final class HeldAnswer extends NonBlockingAnswer {
    private static final System.Logger LOG = System.getLogger(HeldAnswer.class.getName());

    private final Set<String> replayedHeaders;
    private final Duration retryAfter;
    private final CompletableFuture<StoredResponse> recorded = new CompletableFuture<>();
    /** Not null when the client gets the gateway's own answer: the upstream was not reached. */
    private volatile HttpAnswer own;

    HeldAnswer(org.eclipse.jetty.server.Response response, Request upstream, Routes.Target target, int maxBytes,
            Set<String> replayedHeaders, Duration retryAfter) {
        super(response, upstream, target, maxBytes, true);
        this.replayedHeaders = replayedHeaders;
        this.retryAfter = retryAfter;
    }

    /**
     * What is to be recorded, once the exchange ended: the answer (without its body when it streamed), the
     * not-reached problem (a {@code 503}, which releases the key); or {@link OutcomeUnknownException} when the request
     * may have reached the upstream and no whole answer came, which keeps the key in progress until its lease ends.
     */
    CompletableFuture<StoredResponse> recorded() {
        return recorded;
    }

    /** Writes what was held back, once the record is complete. */
    void send(Callback callback) {
        HttpAnswer problem = own;
        if (problem != null) {
            NonBlockingForwarder.write(response(), callback, problem);
        } else {
            write(callback);
        }
    }

    @Override
    void ended() {
        Response answer = answer();
        byte[] body = collected();
        recorded.complete(body == null ? HttpSemantics.withoutBody(answer.getStatus(), stored(answer), length())
                : StoredResponse.of(answer.getStatus(), stored(answer), body));
    }

    @Override
    void failed(Throwable cause, boolean reached) {
        Routes.Target target = target();
        if (!reached) {
            // Not a byte of it reached the upstream: nothing happened there, and a retry may send it. A 503, so the
            // key is released.
            LOG.log(Level.WARNING, () -> "upstream " + target.upstream() + " not reached: " + cause);
            HttpAnswer problem = ProblemType.UPSTREAM_UNAVAILABLE.answer(Forwarder.NOT_REACHED, null, retryAfter);
            own = problem;
            recorded.complete(StoredResponse.of(problem.status(), problem.headers(), problem.body()));
            return;
        }
        // The upstream may be running it still: the key stays in progress until its lease ends, never sent twice.
        recorded.completeExceptionally(new OutcomeUnknownException("upstream", target.lease(), "the request was sent "
                + "to " + target.upstream() + " and " + (answer() == null ? "" : "its answer was cut short: ") + cause,
                cause));
    }

    /** The answer's headers that are stored with it for replay. */
    private Map<String, List<String>> stored(Response answer) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (HttpField field : answer.getHeaders()) {
            if (Forwarder.passesBack(field.getLowerCaseName())
                    && HttpSemantics.isStored(field.getName(), replayedHeaders)) {
                String name = field.getHeader() == HttpHeader.CONTENT_TYPE ? "Content-Type" : field.getName();
                headers.computeIfAbsent(name, n -> new ArrayList<>()).add(field.getValue());
            }
        }
        return headers;
    }
}
