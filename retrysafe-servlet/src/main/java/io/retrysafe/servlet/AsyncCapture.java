package io.retrysafe.servlet;

import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpSemantics;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.ServletResponseWrapper;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
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
 * cycle that fails releases the key at once; the answer the application then gives (an error page) reaches the
 * client as it is, and is not stored. A cycle that times out leaves the handler's work running, and it may still
 * commit: its outcome is unknown, the key stays in progress until its lease ends, and the cycle ends with the
 * {@code 503} outcome-unknown problem, whatever the application answers to the time-out.
 */
final class AsyncCapture implements AsyncListener {
    private static final String ATTRIBUTE = AsyncCapture.class.getName();
    private static final System.Logger LOG = System.getLogger(AsyncCapture.class.getName());

    private enum State { PENDING, RELEASED, TIMED_OUT, DONE }

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

    /** Whether the cycle timed out: the end of the cycle answers it, not the engine's outcome. */
    synchronized boolean isTimedOut() {
        return state == State.TIMED_OUT;
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
        boolean timedOut;
        synchronized (this) {
            if (state == State.DONE) {
                return;
            }
            record = state == State.PENDING;
            timedOut = state == State.TIMED_OUT;
            state = State.DONE;
        }
        if (timedOut) {
            answerUnknown();
            return;
        }
        if (!record) {
            // The key was released when the cycle failed: the answer given since goes out unstored.
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
        synchronized (this) {
            if (state != State.PENDING) {
                return;
            }
            state = State.TIMED_OUT;
        }
        LOG.log(Level.WARNING, "an asynchronous handler timed out; its outcome is unknown, and its key stays in "
                + "progress until its lease ends");
        // The engine keeps the key (not released, no longer renewed): a retry must not run work that may yet commit.
        result.completeExceptionally(timedOut());
        try {
            event.getAsyncContext().complete();
        } catch (IllegalStateException e) {
            // An earlier listener (Spring MVC's) dispatched the time-out: that dispatch ends the cycle, and is answered then.
        }
    }

    private static OutcomeUnknownException timedOut() {
        return new OutcomeUnknownException("async-handler", null, "the asynchronous handler did not finish within "
                + "the container's async timeout, and may still be running", new TimeoutException());
    }

    /** The time-out's answer instead of the application's, unless a body over the bound already went out. */
    private void answerUnknown() throws IOException {
        HttpServletResponse response = (HttpServletResponse) capture.getResponse();
        if (response.isCommitted()) {
            return;
        }
        response.reset();
        Answers.send(response, HttpSemantics.failure(timedOut()));
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
