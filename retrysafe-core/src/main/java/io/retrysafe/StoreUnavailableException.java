package io.retrysafe;

import java.time.Duration;

/**
 * The store could not be reached or failed; the operation was not run (fail closed). Answered with
 * {@code 503} and {@code Retry-After}.
 *
 * <p>{@link #isUnreachable()} tells a store that could not be reached (the only failure fail-open
 * may run an operation unprotected through) from one that answered and refused: full, or
 * misconfigured (a missing table, no permission). Those are never run unprotected.
 */
public class StoreUnavailableException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    private final String storeName;
    private final transient Duration retryAfter;
    private final boolean unreachable;

    /** A store that could not be reached. */
    public StoreUnavailableException(String storeName, Duration retryAfter, String message, Throwable cause) {
        this(storeName, retryAfter, message, cause, true);
    }

    /** @param unreachable false for a store that answered and refused (full, misconfigured) */
    public StoreUnavailableException(String storeName, Duration retryAfter, String message, Throwable cause,
            boolean unreachable) {
        super(message, cause);
        this.storeName = storeName;
        this.retryAfter = retryAfter;
        this.unreachable = unreachable;
    }

    /** True when the store could not be reached; false when it answered and refused. */
    public boolean isUnreachable() {
        return unreachable;
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
        StoreUnavailableException copy = new StoreUnavailableException(storeName, retryAfter, getMessage(), getCause(),
                unreachable);
        copy.setStackTrace(getStackTrace());
        return copy;
    }

    @Override
    public int httpStatus() {
        return 503;
    }
}
