package io.retrysafe;

/**
 * Wraps a checked exception thrown by an {@link Operation}; unchecked exceptions and errors pass
 * through unwrapped. The key was released, so a retry runs the operation again.
 */
public final class OperationFailedException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public OperationFailedException(Throwable cause) {
        super("operation failed: " + cause, cause);
    }

    @Override
    public int httpStatus() {
        return 500;
    }
}
