package io.retrysafe.gateway;

import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.client.InputStreamResponseListener;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.io.Content;

/**
 * The upstream's answer as the client's threads receive it. An answer of known length up to
 * {@link CollectedBody#MAX_BYTES} bytes is collected as it arrives, and whoever awaits it is told once, when it has all
 * come; an answer of unknown or larger length is told of at its headers, and its body streams from {@link #stream()}.
 * A failure (not sent, no answer in time, cut short) is told of when the exchange ends. One wake-up per small answer,
 * where a stream read as it arrives would wake its reader at the headers and again for the body.
 */
abstract class UpstreamAnswer implements Response.Listener {
    private final Request upstream;
    /**
     * Whether a connection took the request, before its first byte was written: a failure after that may have reached
     * the upstream. Connection refused and connect time-outs come before it.
     */
    private final AtomicBoolean sent = new AtomicBoolean();
    private Deadlines.Pending timeout;
    /** Set once the headers are in: what the answer is. */
    private volatile Response answer;
    /** Set once the headers are in, for an answer that is not collected: where its body streams from. */
    private volatile InputStreamResponseListener stream;
    private CollectedBody body;
    private volatile Throwable failure;

    UpstreamAnswer(Request upstream) {
        this.upstream = upstream;
    }

    /**
     * Sends the request, bounding the wait for the answer's headers by {@code bound}: past it the exchange is aborted
     * and answered as a failure.
     */
    final void send(Deadlines deadlines, Duration bound) {
        upstream.onRequestBegin(r -> sent.set(true));
        timeout = deadlines.start(bound, () -> upstream.abort(new TimeoutException("no answer within " + bound)));
        upstream.send(this);
    }

    /**
     * Called once, by a client thread, which must not block: the answer is collected whole ({@link #collected()}), or
     * its headers are in and its body streams ({@link #stream()}), or the exchange failed ({@link #failure()}).
     */
    abstract void arrived();

    /** The exchange with the upstream. */
    final Request exchange() {
        return upstream;
    }

    /** Whether a connection took the request before it failed. */
    final boolean sent() {
        return sent.get();
    }

    /** The answer's headers, or null when none came. */
    final Response answer() {
        return answer;
    }

    /** Where the body of an answer that was not collected streams from; null otherwise. */
    final InputStreamResponseListener stream() {
        return stream;
    }

    /** The whole body of a collected answer; null when it streams or the exchange failed. */
    final CollectedBody collected() {
        return stream == null && failure == null && answer != null ? body : null;
    }

    /** Why the exchange failed, or null. */
    final Throwable failure() {
        return failure;
    }

    @Override
    public final void onHeaders(Response response) {
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
        arrived();
    }

    @Override
    public final void onContent(Response response, Content.Chunk chunk, Runnable demander) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onContent(response, chunk, demander);
        } else if (body.add(chunk.getByteBuffer(), upstream)) {
            demander.run();
        }
    }

    @Override
    public final void onSuccess(Response response) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onSuccess(response);
        }
    }

    @Override
    public final void onFailure(Response response, Throwable cause) {
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onFailure(response, cause);
        }
    }

    @Override
    public final void onComplete(Result result) {
        timeout.cancel();
        InputStreamResponseListener streamed = stream;
        if (streamed != null) {
            streamed.onComplete(result);
            return;
        }
        if (result.isFailed() || answer == null || !body.whole()) {
            failure = result.getFailure() != null ? result.getFailure() : body.cutShort();
        }
        arrived();
    }
}
