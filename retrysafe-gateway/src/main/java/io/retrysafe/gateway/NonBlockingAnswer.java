package io.retrysafe.gateway;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.Invocable;

/**
 * The upstream's answer on the non-blocking path, as the client's threads receive it, for the client's connection. An
 * answer of declared length up to the bound is collected whole, and, when asked, one of unknown length up to it too:
 * so that one cut short is answered as such rather than passed on in part. A larger one goes to the client as it
 * arrives, each chunk asked for once the one before is written. When the end is written is the subclass's choice: at
 * once for a request no route protects, once its outcome is recorded for a protected one.
 *
 * <p>Every method runs on a client thread, or on the thread the subclass writes the end from: none blocks.
 */
abstract class NonBlockingAnswer implements Response.Listener {
    private final org.eclipse.jetty.server.Response response;
    private final Request upstream;
    private final Routes.Target target;
    private final int maxBytes;
    private final boolean collectsUnknownLength;
    /** Whether a connection took the request: a failure after that may have reached the upstream. */
    private final AtomicBoolean sent = new AtomicBoolean();
    private Deadlines.Pending timeout;
    private Response answer;
    /** The body collected so far, {@link #length} bytes of it; null once it streams. */
    private byte[] body;
    private int length;
    /** The length the answer declared, or -1. */
    private long declared = -1;
    /** Whether the answer goes to the client as it arrives, its headers committed. */
    private volatile boolean streamed;
    private long streamedBytes;
    private volatile boolean clientLeft;

    /**
     * @param maxBytes the largest answer collected whole
     * @param collectsUnknownLength whether an answer of unknown length is collected (up to {@code maxBytes}) rather
     *     than streamed from its first byte
     */
    NonBlockingAnswer(org.eclipse.jetty.server.Response response, Request upstream, Routes.Target target, int maxBytes,
            boolean collectsUnknownLength) {
        this.response = response;
        this.upstream = upstream;
        this.target = target;
        this.maxBytes = maxBytes;
        this.collectsUnknownLength = collectsUnknownLength;
    }

    /** The whole answer came: collected, or streamed to its end (or to a client that left meanwhile). */
    abstract void ended();

    /**
     * No whole answer came.
     *
     * @param reached whether the request may have reached the upstream: a connection took it, or an answer began
     */
    abstract void failed(Throwable cause, boolean reached);

    /** Sends the request, bounding the wait for the answer's headers by the route's response time-out. */
    final void send(Deadlines deadlines) {
        Duration bound = target.responseTimeout();
        upstream.onRequestBegin(r -> sent.set(true));
        timeout = deadlines.start(bound, () -> upstream.abort(new TimeoutException("no answer within " + bound)));
        upstream.send(this);
    }

    /** Whether part of the answer went out already: a failure now can only cut the client's connection. */
    final boolean isCommitted() {
        return streamed;
    }

    /** Writes the collected answer whole, or the end of the streamed one. */
    final void write(Callback callback) {
        if (streamed) {
            response.write(true, null, callback);
            return;
        }
        NonBlockingForwarder.copyHeaders(answer, response);
        if (!HttpMethod.HEAD.is(upstream.getMethod())) {
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, length);
        }
        response.write(true, ByteBuffer.wrap(body, 0, length), callback);
    }

    final org.eclipse.jetty.server.Response response() {
        return response;
    }

    final Routes.Target target() {
        return target;
    }

    /** The answer's status and headers; null until they came. */
    final Response answer() {
        return answer;
    }

    /**
     * The collected body, or null when the answer streamed. The array itself when the answer filled it (a declared
     * length sizes it, and nothing writes to it once the answer ended): whoever keeps it copies it.
     */
    final byte[] collected() {
        return streamed ? null : body.length == length ? body : Arrays.copyOf(body, length);
    }

    /** The body's length: declared, or as far as it streamed. */
    final long length() {
        return streamed ? (declared >= 0 ? declared : streamedBytes) : length;
    }

    @Override
    public final void onHeaders(Response answer) {
        timeout.cancel();
        this.answer = answer;
        int status = answer.getStatus();
        // No body follows whatever length is declared: the answer to HEAD, 1xx, 204, 304.
        boolean bodiless = HttpMethod.HEAD.is(upstream.getMethod()) || status < 200 || status == 204 || status == 304;
        declared = bodiless ? 0 : answer.getHeaders().getLongField(HttpHeader.CONTENT_LENGTH);
        if (declared > maxBytes || (declared < 0 && !collectsUnknownLength)) {
            stream();
        } else {
            body = new byte[declared >= 0 ? (int) declared : Math.min(maxBytes, 8 * 1024)];
        }
    }

    @Override
    public final void onContent(Response answer, Content.Chunk chunk, Runnable demander) {
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
            // Of unknown length, and over the bound: what came so far goes out first, then the rest as it arrives.
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

    /** The client left while the answer streamed to it: the upstream answered; the rest of it is not read. */
    private void clientLeft(Throwable x) {
        clientLeft = true;
        upstream.abort(x);
    }

    @Override
    public final void onComplete(Result result) {
        timeout.cancel();
        if (streamed ? clientLeft || !result.isFailed() : !result.isFailed() && (declared < 0 || length == declared)) {
            ended();
            return;
        }
        Throwable cause = result.getFailure() != null ? result.getFailure()
                : new IOException("the answer ended after " + length + " of its " + declared + " bytes");
        failed(cause, answer != null || sent.get());
    }
}
