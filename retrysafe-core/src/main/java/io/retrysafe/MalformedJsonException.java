package io.retrysafe;

/**
 * A body that claims to be JSON but is not, found while computing its canonical form. It names the
 * byte offset and what was expected there, never the body's content, so that it can be logged and
 * returned to the client as it is; an HTTP layer answers it with {@code 400}.
 */
public final class MalformedJsonException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    private final int offset;
    private final String reason;

    /**
     * @param offset the offset, in bytes from the start of the body, where parsing stopped
     * @param reason what was expected there and what was found, for example
     *               {@code "expected ':' after a member name, but was ','"}
     */
    public MalformedJsonException(int offset, String reason) {
        super("malformed JSON at offset " + offset + ": " + reason);
        this.offset = offset;
        this.reason = reason;
    }

    /** The offset, in bytes from the start of the body, where parsing stopped. */
    public int offset() {
        return offset;
    }

    /** The message without its offset prefix: what was expected, and what was found. */
    public String reason() {
        return reason;
    }

    @Override
    public int httpStatus() {
        return 400;
    }
}
