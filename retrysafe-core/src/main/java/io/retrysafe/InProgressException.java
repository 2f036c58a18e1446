package io.retrysafe;

import java.time.Duration;

/** Another attempt holds the key and its lease is alive; answered with {@code 409} and {@code Retry-After}. */
public final class InProgressException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    private final transient Duration retryAfter;

    public InProgressException(String message, Duration retryAfter) {
        super(message);
        this.retryAfter = retryAfter;
    }

    public Duration retryAfter() {
        return retryAfter;
    }

    @Override
    public int httpStatus() {
        return 409;
    }
}
