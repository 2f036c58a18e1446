package io.retrysafe;

/**
 * A completed record's stored response cannot be opened by the configured
 * {@link StoredResponseProtection}: it was sealed with a key that is no longer configured, it
 * failed its integrity check (altered, or copied from another record), or it is not sealed at all.
 * The operation completed earlier, so it is not run again; and what is stored is not replayed as if
 * it were an answer. Answered with {@code 500}: retrying with the same key gets the same refusal until
 * the key is configured again or the record expires.
 */
public final class StoredResponseUnreadableException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public StoredResponseUnreadableException(String message) {
        super(message);
    }

    public StoredResponseUnreadableException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public int httpStatus() {
        return 500;
    }
}
