package io.retrysafe;

/** The key was already used with a different request; answered with {@code 422}. */
public final class FingerprintMismatchException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public FingerprintMismatchException(String message) {
        super(message);
    }

    @Override
    public int httpStatus() {
        return 422;
    }
}
