package io.retrysafe;

/**
 * The key is to be scoped to the caller, and there is none: no authenticated principal, or one without
 * a name. Answered with {@code 401}; the operation did not run. Never falls back to a shared scope.
 */
public final class UnauthenticatedException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public UnauthenticatedException(String message) {
        super(message);
    }

    @Override
    public int httpStatus() {
        return 401;
    }
}
