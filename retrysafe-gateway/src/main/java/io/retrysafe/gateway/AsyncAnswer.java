package io.retrysafe.gateway;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServletResponse;
import org.eclipse.jetty.client.Request;

/**
 * The upstream's answer to a request no route protects, awaited without a request thread, so that requests held by
 * a slow upstream cannot take every thread of the gateway. The request thread sends the request and returns; a
 * collected answer is written whole by a request thread once it has all come.
 *
 * <p>Everything else goes back to a request thread (an asynchronous dispatch to the {@link Forwarder}) and takes the
 * blocking path: an answer of unknown or larger length streams from there as it arrives, and a failure (not sent, no
 * answer in time, cut short) is answered there as on a protected route's path.
 */
final class AsyncAnswer extends UpstreamAnswer {
    /** The request attribute an asynchronous dispatch finds this under. */
    static final String ATTRIBUTE = AsyncAnswer.class.getName();

    private final AsyncContext async;
    private final HttpServletResponse response;
    private final Routes.Target target;

    private AsyncAnswer(AsyncContext async, HttpServletResponse response, Request upstream, Routes.Target target) {
        super(upstream);
        this.async = async;
        this.response = response;
        this.target = target;
    }

    /** Sends the request; the answer is written, or handed back to a request thread, once it has come. */
    static void send(AsyncContext async, HttpServletResponse response, Request upstream, Routes.Target target,
            Deadlines deadlines) {
        AsyncAnswer listener = new AsyncAnswer(async, response, upstream, target);
        async.getRequest().setAttribute(ATTRIBUTE, listener);
        // The gateway's own bound on the wait for the answer's headers; the container's would answer 500 on its own.
        async.setTimeout(0);
        listener.send(deadlines, target.responseTimeout());
    }

    @Override
    void arrived() {
        CollectedBody body = collected();
        if (body == null) {
            async.dispatch();
            return;
        }
        // Written by a request thread: the servlet's output blocks while the client is slow to read, and the client's
        // threads, which read every upstream's answers, must never wait.
        async.start(() -> {
            try {
                Forwarder.writeCollected(this, body, response, target);
            } finally {
                async.complete();
            }
        });
    }
}
