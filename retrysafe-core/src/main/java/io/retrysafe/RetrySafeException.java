package io.retrysafe;

/**
 * The root of every exception RetrySafe throws. Each subclass carries what a caller needs to
 * answer its own client, and maps to one HTTP status.
 */
public abstract class RetrySafeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected RetrySafeException(String message) {
        super(message);
    }

    protected RetrySafeException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The HTTP status this failure maps to at an HTTP boundary. */
    public abstract int httpStatus();
}
