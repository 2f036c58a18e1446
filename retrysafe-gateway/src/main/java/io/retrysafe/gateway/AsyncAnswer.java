package io.retrysafe.gateway;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.client.InputStreamResponseListener;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.io.Content;

/**
 * The upstream's answer to a request no route protects, awaited without a request thread, so that requests held by
 * a slow upstream cannot take every thread of the gateway. The request thread sends the request and returns; an answer
 * of known length up to {@link CollectedBody#MAX_BYTES} bytes is collected as it arrives, by the client's threads, and
 * written whole by a request thread once it has all come.
 *
 * <p>Everything else goes back to a request thread (an asynchronous dispatch to the {@link Forwarder}) and takes the
 * blocking path: an answer of unknown or larger length streams from there as it arrives, and a failure (not sent, no
 * answer in time, cut short) is answered there as on a protected route's path.
 */
final class AsyncAnswer implements Response.Listener {
    /** The request attribute an asynchronous dispatch finds this under. */
    static final String ATTRIBUTE = AsyncAnswer.class.getName();
    private static final System.Logger LOG = System.getLogger(AsyncAnswer.class.getName());

    private final AsyncContext async;
    private final HttpServletResponse response;
    private final Request upstream;
    private final Routes.Target target;
    /** Whether a connection took the request: a failure after that may have reached the upstream. */
    private final AtomicBoolean sent;
    private Deadlines.Pending timeout;
    /** Set once the headers are in: what the answer is. */
    private volatile Response answer;
    /** Set once the headers are in, for an answer that is not buffered: where its body streams from. */
    private volatile InputStreamResponseListener stream;
    private CollectedBody body;
    private volatile Throwable failure;

    private AsyncAnswer(AsyncContext async, HttpServletResponse response, Request upstream, Routes.Target target,
            AtomicBoolean sent) {
        this.async = async;
        this.response = response;
        this.upstream = upstream;
        this.target = target;
        this.sent = sent;
    }

    /** Sends the request; the answer is written, or handed back to a request thread, once it has come. */
    static void send(AsyncContext async, HttpServletResponse response, Request upstream, Routes.Target target,
            AtomicBoolean sent, Deadlines deadlines) {
        AsyncAnswer listener = new AsyncAnswer(async, response, upstream, target, sent);
        async.getRequest().setAttribute(ATTRIBUTE, listener);
        // The gateway's own bound on the wait for the answer's headers; the container's would answer 500 on its own.
        async.setTimeout(0);
        Duration bound = target.responseTimeout();
        listener.timeout = deadlines.start(bound, () -> upstream.abort(new TimeoutException("no answer within "
                + bound)));
        upstream.send(listener);
    }

    /** The exchange with the upstream. */
    Request exchange() {
        return upstream;
    }

    /** Whether a connection took the request before it failed. */
    boolean sent() {
        return sent.get();
    }

    /** The answer's headers, or null when none came. */
    Response answer() {
        return answer;
    }

    /** Where the body of an answer that was not buffered streams from; null otherwise. */
    InputStreamResponseListener stream() {
        return stream;
    }

    /** Why the exchange failed, or null. */
    Throwable failure() {
        return failure;
    }

    @Override
    public void onHeaders(Response response) {
        timeout.cancel();
        body = CollectedBody.of(upstream, response);
        if (body != null) {
            answer = response;
            return;
        }
        InputStreamResponseListener streamed = new InputStreamResponseListener();
        streamed.onHeaders(response);
        stream = streamed;
        answer = response;
        async.dispatch();
    }

    @Override
    public void onContent(Response response, Content.Chunk chunk, Runnable demander) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onContent(response, chunk, demander);
        } else if (body.add(chunk.getByteBuffer(), upstream)) {
            demander.run();
        }
    }

    @Override
    public void onSuccess(Response response) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onSuccess(response);
        }
    }

    @Override
    public void onFailure(Response response, Throwable cause) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onFailure(response, cause);
        }
    }

    @Override
    public void onComplete(Result result) {
        timeout.cancel();
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onComplete(result);
            return;
        }
        if (result.isFailed() || answer == null || !body.whole()) {
            failure = result.getFailure() != null ? result.getFailure() : body.cutShort();
            async.dispatch();
            return;
        }
        // Written by a request thread: the servlet's output blocks while the client is slow to read, and the client's
        // threads, which read every upstream's answers, must never wait.
        async.start(() -> {
            try {
                Forwarder.copyHeaders(answer, response);
                response.getOutputStream().write(body.bytes().array(), 0, body.length());
            } catch (IOException | RuntimeException e) {
                // The client left before its answer was written; the upstream's part is done, nothing is held.
                LOG.log(Level.INFO, () -> "the client left before the answer of " + target.upstream()
                        + " was written: " + e);
            } finally {
                async.complete();
            }
        });
    }
}
