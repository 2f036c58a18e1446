package io.retrysafe.servlet;

import io.retrysafe.RetrySafeException;

/**
 * A handler on a protected route went asynchronous (or streams its body) where its outcome cannot be
 * recorded: the filter answers {@link Problem#ASYNC_HANDLER_REFUSED} and the key is released.
 */
public final class AsyncHandlerRefusedException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public AsyncHandlerRefusedException(String message) {
        super(message);
    }

    @Override
    public int httpStatus() {
        return Problem.ASYNC_HANDLER_REFUSED.status();
    }
}
