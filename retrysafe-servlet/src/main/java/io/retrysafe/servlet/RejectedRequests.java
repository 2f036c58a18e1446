package io.retrysafe.servlet;

import io.retrysafe.InvalidKeyException;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Collections;
import java.util.concurrent.atomic.AtomicBoolean;

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
        closeAfterAnswer(request, response);
        Answers.send(response, HttpSemantics.rejected(config.keyRules(),
                Collections.list(request.getHeaders(HttpIdempotency.HEADER)), listener));
        return true;
    }

    /**
     * Sends {@code refusal} to a request refused before its body was read to its end. When the request declares a
     * body, the answer says {@code Connection: close}: the container may not find the rest of the body to discard (it
     * has not arrived yet) and then closes the connection after the answer, and a keep-alive client told nothing
     * would send its next request on a connection about to close; a client does not resend a POST it may have
     * delivered. Then, where the request may go asynchronous, it lingers: what the client goes on sending of the
     * body is read and discarded, within {@link HttpSemantics#LINGER} and {@link HttpSemantics#LINGER_BYTES}.
     * Closed with unread bytes waiting, a connection is reset, not closed, and a client still sending its body when
     * the reset arrives loses the answer it had not read yet (Jetty discards only a few kilobytes before it resets).
     */
    public static void refuseUnread(HttpServletRequest request, HttpServletResponse response, Refusal refusal)
            throws IOException {
        if (!closesUnreadBody(request)) {
            refusal.send();
            return;
        }
        response.setHeader("Connection", "close");
        refusal.send();
        if (request.isAsyncSupported() && !request.isAsyncStarted()) {
            Lingering.start(request, response);
        }
    }

    /**
     * Says {@code Connection: close} on the answer to a request whose body was read in part and failed (cut short,
     * malformed): the container closes the connection after the answer, and reading on would meet the same failure.
     * Call it before the answer is written.
     */
    public static void closeAfterAnswer(HttpServletRequest request, HttpServletResponse response) {
        if (closesUnreadBody(request)) {
            response.setHeader("Connection", "close");
        }
    }

    /** One refusal's answer, written by {@link #refuseUnread}. */
    @FunctionalInterface
    public interface Refusal {
        void send() throws IOException;
    }

    private static boolean closesUnreadBody(HttpServletRequest request) {
        return HttpSemantics.closesUnreadBody(request.getContentLengthLong(), request.getHeader("Transfer-Encoding"));
    }

    /** Reads a refused body to its end, or to the lingering's bounds, then completes the request. */
    private static final class Lingering implements ReadListener, AsyncListener {
        private final ServletInputStream body;
        private final AsyncContext context;
        private final AtomicBoolean done = new AtomicBoolean();
        private final byte[] buffer = new byte[8192];
        private long left = HttpSemantics.LINGER_BYTES;

        private Lingering(ServletInputStream body, AsyncContext context) {
            this.body = body;
            this.context = context;
        }

        static void start(HttpServletRequest request, HttpServletResponse response) {
            AsyncContext context;
            ServletInputStream body;
            try {
                response.flushBuffer();
                body = request.getInputStream();
                context = request.startAsync();
            } catch (IOException | IllegalStateException e) {
                return; // the client has gone, or the body was read as characters: nothing to linger on
            }
            context.setTimeout(HttpSemantics.LINGER.toMillis());
            Lingering lingering = new Lingering(body, context);
            context.addListener(lingering);
            try {
                body.setReadListener(lingering);
            } catch (RuntimeException e) {
                lingering.complete(); // a request wrapper that cannot read without blocking
            }
        }

        @Override
        public void onDataAvailable() throws IOException {
            while (body.isReady()) {
                int read = body.read(buffer);
                if (read < 0) {
                    return; // onAllDataRead follows
                }
                left -= read;
                if (left <= 0) {
                    complete();
                    return;
                }
            }
        }

        @Override
        public void onAllDataRead() {
            complete();
        }

        @Override
        public void onError(Throwable failure) {
            complete();
        }

        @Override
        public void onTimeout(AsyncEvent event) {
            complete();
        }

        @Override
        public void onError(AsyncEvent event) {
            complete();
        }

        @Override
        public void onComplete(AsyncEvent event) {
            done.set(true);
        }

        @Override
        public void onStartAsync(AsyncEvent event) {
        }

        private void complete() {
            if (done.compareAndSet(false, true)) {
                context.complete();
            }
        }
    }

    /** The problem for a key that breaks a rule: missing-key or invalid-key; member {@code rule} names the rule. */
    void refuseKey(HttpServletResponse response, InvalidKeyException e) throws IOException {
        listener.onInvalidKey(e);
        Answers.send(response, HttpSemantics.keyRefused(e));
    }
}
