package io.retrysafe;

import java.time.Duration;

/**
 * Standalone mode: the operation ran, but the store failed to record its outcome, also after the
 * engine tried again within its bound. Its effects may have happened; the key stays held until its
 * lease runs out, and a retry after that runs the operation again. Unlike a plain
 * {@link StoreUnavailableException}, it makes no promise that the operation did not run; answered
 * with {@code 503} and the problem type {@code /problems/outcome-unknown}.
 *
 * <p>An operation throws it itself when it cannot know whether its effect happened (a request sent to
 * another service that never answered): the engine then leaves the key in progress, instead of releasing
 * it, until the lease ends, so no retry sends the request a second time while the first may still run.
 */
public final class OutcomeUnknownException extends StoreUnavailableException {
    private static final long serialVersionUID = 1L;

    public OutcomeUnknownException(String storeName, Duration retryAfter, String message, Throwable cause) {
        super(storeName, retryAfter, message, cause);
    }
}
