package io.retrysafe;

import java.time.Duration;

/**
 * The store could not be reached or failed; the operation was not run (fail closed). Answered with
 * {@code 503} and {@code Retry-After}.
 */
public class StoreUnavailableException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    private final String storeName;
    private final transient Duration retryAfter;

    public StoreUnavailableException(String storeName, Duration retryAfter, String message, Throwable cause) {
        super(message, cause);
        this.storeName = storeName;
        this.retryAfter = retryAfter;
    }

    public String storeName() {
        return storeName;
    }

    public Duration retryAfter() {
        return retryAfter;
    }

    /**
     * The same failure with another {@code Retry-After}: a store only knows its own default, the
     * engine answers with the operation's configured one.
     */
    public StoreUnavailableException withRetryAfter(Duration retryAfter) {
        if (retryAfter.equals(this.retryAfter)) {
            return this;
        }
        StoreUnavailableException copy = new StoreUnavailableException(storeName, retryAfter, getMessage(), getCause());
        copy.setStackTrace(getStackTrace());
        return copy;
    }

    @Override
    public int httpStatus() {
        return 503;
    }
}
