package io.retrysafe.gateway;

import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.Invocable;

/**
 * The upstream's answer to a protected request on the non-blocking path, held back until its outcome is recorded, as
 * the servlet filter holds a handler's response: an answer up to the route's {@code max-response-bytes} is collected
 * whole, then written once the record is complete ({@link #send}); a larger one goes to the client as it arrives and is
 * recorded without its body, its last byte written once the record is complete. {@link #recorded()} completes with
 * what is recorded: the answer, the not-reached problem (a {@code 503}, which releases the key), or fails with
 * {@link OutcomeUnknownException} when the request may have reached the upstream and no whole answer came.
 *
 * <p>Every method runs on a client thread, or the thread that completes the record: none blocks.
 */
final class HeldAnswer implements Response.Listener {
    private static final System.Logger LOG = System.getLogger(HeldAnswer.class.getName());
    private final org.eclipse.jetty.server.Response response;
    private final Request upstream;
    private final Routes.Target target;
    private final int maxBytes;
    private final Set<String> replayedHeaders;
    private final Duration retryAfter;
    private final CompletableFuture<StoredResponse> recorded = new CompletableFuture<>();
    /** Whether a connection took the request: a failure after that may have reached the upstream. */
    private final AtomicBoolean sent = new AtomicBoolean();
    private Deadlines.Pending timeout;
    private Response answer;
    /** The body collected so far; its length is {@link #length}. */
    private byte[] body;
    private int length;
    /** The length the answer declared, or -1. */
    private long declared = -1;
    /** Whether the answer goes to the client as it arrives: over the bound, its headers committed. */
    private volatile boolean streamed;
    private long streamedBytes;
    private volatile boolean clientLeft;
    /** Not null when the client gets the gateway's own answer: the upstream was not reached. */
    private volatile HttpAnswer own;

    HeldAnswer(org.eclipse.jetty.server.Response response, Request upstream, Routes.Target target, int maxBytes,
            Set<String> replayedHeaders, Duration retryAfter) {
        this.response = response;
        this.upstream = upstream;
        this.target = target;
        this.maxBytes = maxBytes;
        this.replayedHeaders = replayedHeaders;
        this.retryAfter = retryAfter;
    }

    /**
     * Sends the request, bounding the wait for the answer's headers by the route's response time-out.
     *
     * @return what is to be recorded, once the answer has all come
     */
    CompletableFuture<StoredResponse> send(Deadlines deadlines) {
        Duration bound = target.responseTimeout();
        upstream.onRequestBegin(r -> sent.set(true));
        timeout = deadlines.start(bound, () -> upstream.abort(new TimeoutException("no answer within " + bound)));
        upstream.send(this);
        return recorded;
    }

    /** Whether part of the answer went out already: a failure now can only cut the client's connection. */
    boolean isCommitted() {
        return streamed;
    }

    /** Writes what was held back, once the record is complete. */
    void send(Callback callback) {
        HttpAnswer problem = own;
        if (problem != null) {
            NonBlockingForwarder.write(response, callback, problem);
        } else if (streamed) {
            response.write(true, null, callback);
        } else {
            NonBlockingForwarder.copyHeaders(answer, response);
            if (!HttpMethod.HEAD.is(upstream.getMethod())) {
                response.getHeaders().put(HttpHeader.CONTENT_LENGTH, length);
            }
            response.write(true, ByteBuffer.wrap(body, 0, length), callback);
        }
    }

    @Override
    public void onHeaders(Response answer) {
        timeout.cancel();
        this.answer = answer;
        int status = answer.getStatus();
        boolean bodiless = HttpMethod.HEAD.is(upstream.getMethod()) || status < 200 || status == 204 || status == 304;
        declared = bodiless ? 0 : answer.getHeaders().getLongField(HttpHeader.CONTENT_LENGTH);
        if (declared > maxBytes) {
            stream();
        } else {
            body = new byte[declared >= 0 ? (int) declared : Math.min(maxBytes, 8 * 1024)];
        }
    }

    @Override
    public void onContent(Response answer, Content.Chunk chunk, Runnable demander) {
        if (streamed) {
            write(chunk, demander);
            return;
        }
        ByteBuffer bytes = chunk.getByteBuffer();
        int n = bytes.remaining();
        if (declared >= 0 && n > declared - length) {
            upstream.abort(new IOException("the answer is longer than its Content-Length of " + declared));
            return;
        }
        if (length + n > maxBytes) {
            // Over the bound, of unknown length: what came so far goes out first, then the rest as it arrives.
            ByteBuffer held = ByteBuffer.allocate(length + n).put(body, 0, length).put(bytes).flip();
            body = null;
            stream();
            streamedBytes = held.remaining();
            response.write(false, held, Callback.from(Invocable.InvocationType.NON_BLOCKING, demander,
                    this::clientLeft));
            return;
        }
        if (n > body.length - length) {
            body = Arrays.copyOf(body, Math.min(maxBytes, Math.max(body.length * 2, length + n)));
        }
        bytes.get(body, length, n);
        length += n;
        demander.run();
    }

    private void stream() {
        streamed = true;
        NonBlockingForwarder.copyHeaders(answer, response);
        if (declared >= 0) {
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, declared);
        }
    }

    private void write(Content.Chunk chunk, Runnable demander) {
        chunk.retain();
        streamedBytes += chunk.remaining();
        response.write(false, chunk.getByteBuffer(), Callback.from(Invocable.InvocationType.NON_BLOCKING, () -> {
            chunk.release();
            demander.run();
        }, x -> {
            chunk.release();
            clientLeft(x);
        }));
    }

    /** The client left while an answer over the bound streamed to it: the upstream answered, so it is recorded. */
    private void clientLeft(Throwable x) {
        clientLeft = true;
        upstream.abort(x);
    }

    @Override
    public void onComplete(Result result) {
        timeout.cancel();
        if (streamed && (clientLeft || !result.isFailed())) {
            recorded.complete(HttpSemantics.withoutBody(answer.getStatus(), stored(answer),
                    declared >= 0 ? declared : streamedBytes));
            return;
        }
        if (!result.isFailed() && (declared < 0 || length == declared)) {
            recorded.complete(StoredResponse.of(answer.getStatus(), stored(answer), Arrays.copyOf(body, length)));
            return;
        }
        Throwable cause = result.getFailure() != null ? result.getFailure()
                : new IOException("the answer ended after " + length + " of its " + declared + " bytes");
        if (answer == null && !sent.get()) {
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
                + "to " + target.upstream() + " and " + (answer == null ? "" : "its answer was cut short: ") + cause,
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
