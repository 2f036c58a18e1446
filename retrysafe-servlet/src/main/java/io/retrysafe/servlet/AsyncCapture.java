package io.retrysafe.servlet;

import io.retrysafe.StoredResponse;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.ServletResponseWrapper;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The held-back response of a handler that went asynchronous (a {@code CompletableFuture}, {@code DeferredResult},
 * {@code Callable} or {@code WebAsyncTask} in Spring MVC, {@code startAsync()} in a servlet). Its {@link #result()}
 * completes when the cycle's last dispatch through the filter ends without starting another cycle (or, for a cycle
 * ended by {@code complete()} alone, when it completes): the engine then records it, and the filter answers. A
 * cycle that times out or fails releases the key at once; the answer the application then gives (Spring's
 * {@code 503} for a time-out, an error page) reaches the client as it is, and is not stored.
 */
final class AsyncCapture implements AsyncListener {
    private static final String ATTRIBUTE = AsyncCapture.class.getName();
    private static final System.Logger LOG = System.getLogger(AsyncCapture.class.getName());

    private enum State { PENDING, RELEASED, DONE }

    private final CapturingResponse capture;
    private final Supplier<StoredResponse> stored;
    private final CompletableFuture<StoredResponse> result = new CompletableFuture<>();
    private State state = State.PENDING;

    private AsyncCapture(CapturingResponse capture, Supplier<StoredResponse> stored) {
        this.capture = capture;
        this.stored = stored;
    }

    /** Called on the request thread once the handler returned with its cycle started. */
    static AsyncCapture start(HttpServletRequest request, CapturingResponse capture, Supplier<StoredResponse> stored) {
        AsyncCapture async = new AsyncCapture(capture, stored);
        request.setAttribute(ATTRIBUTE, async);
        request.getAsyncContext().addListener(async);
        return async;
    }

    /** The capture of this request's asynchronous handler, or null. */
    static AsyncCapture of(ServletRequest request) {
        return request.getAttribute(ATTRIBUTE) instanceof AsyncCapture async ? async : null;
    }

    /** The handler's response, once its cycle ended; failed when the cycle timed out or failed. */
    CompletableFuture<StoredResponse> result() {
        return result;
    }

    /**
     * An {@code ASYNC} dispatch of the request: the filter already claimed the key on the {@code REQUEST}
     * dispatch and claims nothing here; it runs the chain, and the response is complete unless the chain
     * started another cycle.
     */
    void dispatched(FilterChain chain, HttpServletRequest request, ServletResponse response)
            throws IOException, ServletException {
        // A cycle started by startAsync() without arguments dispatches the container's own response: the
        // handler's answer must still be held back here, not sent past the filter.
        ServletResponse held = response == capture
                || (response instanceof ServletResponseWrapper wrapper && wrapper.isWrapperFor(capture)) ? response : capture;
        try {
            chain.doFilter(request, held);
        } catch (IOException | ServletException | RuntimeException | Error e) {
            fail(e);
            throw e;
        }
        if (!request.isAsyncStarted()) {
            finish();
        }
    }

    /** The filter refused the handler on the request thread and answered itself: nothing more to send. */
    synchronized void abandon() {
        state = State.DONE;
    }

    private void finish() throws IOException {
        finish(false);
    }

    /** @param unseen the cycle wrote to the container's response, past the capture: there is nothing to store */
    private void finish(boolean unseen) throws IOException {
        if (unseen) {
            fail(new IllegalStateException("the asynchronous handler wrote its answer past the filter (startAsync() "
                    + "without arguments, ended by complete()); its key is released"));
        }
        boolean record;
        synchronized (this) {
            if (state == State.DONE) {
                return;
            }
            record = state == State.PENDING;
            state = State.DONE;
        }
        if (!record) {
            // The key was released when the cycle timed out or failed: the answer given since goes out unstored.
            capture.sendHeldBack();
            return;
        }
        StoredResponse response;
        try {
            response = stored.get();
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
            return;
        }
        // Completing runs the engine's record and the filter's answer on this thread, before the container
        // sends the response.
        result.complete(response);
    }

    private void fail(Throwable failure) {
        synchronized (this) {
            if (state != State.PENDING) {
                return;
            }
            state = State.RELEASED;
        }
        result.completeExceptionally(failure);
    }

    @Override
    public void onComplete(AsyncEvent event) throws IOException {
        // A cycle ended by complete() without a dispatch through the filter. If it was started without the
        // filter's response, the handler wrote to the client directly: an empty capture must not be stored.
        finish(event.getSuppliedResponse() != capture && !(event.getSuppliedResponse() instanceof ServletResponseWrapper w
                && w.isWrapperFor(capture)));
    }

    @Override
    public void onTimeout(AsyncEvent event) {
        LOG.log(Level.DEBUG, "an asynchronous handler timed out; its key is released");
        fail(new TimeoutException("the asynchronous handler did not finish within the container's async timeout"));
    }

    @Override
    public void onError(AsyncEvent event) {
        fail(event.getThrowable() != null ? event.getThrowable()
                : new IOException("the asynchronous cycle failed"));
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
        // Listeners are dropped when a dispatch starts another cycle: stay on it.
        event.getAsyncContext().addListener(this);
    }
}
