package io.retrysafe.nats;

/**
 * The headers of a message published to the dead-letter subject. The payload is the original
 * payload, byte for byte; the original headers are copied except the {@code Nats-*} ones, which are
 * instructions to the server ({@code Nats-Msg-Id}, {@code Nats-Expected-*}, …).
 */
public final class DeadLetterHeaders {
    /** {@link Disposition.Reason#header()}: {@code retries-exhausted}, {@code permanent-failure}, … */
    public static final String REASON = "RetrySafe-Reason";
    /** The handler's exception, {@code class: message}, on one line, at most {@value #MAX_ERROR_LENGTH} characters. */
    public static final String ERROR = "RetrySafe-Error";
    public static final String STREAM = "RetrySafe-Stream";
    public static final String CONSUMER = "RetrySafe-Consumer";
    public static final String STREAM_SEQUENCE = "RetrySafe-Stream-Sequence";
    /** How often the message was delivered when it was given up. */
    public static final String DELIVERED = "RetrySafe-Delivered";
    /** The subject the message was published to. */
    public static final String SUBJECT = "RetrySafe-Subject";
    /** The message's id as {@link MessageIds} found it; absent when it had none. */
    public static final String MESSAGE_ID = "RetrySafe-Message-Id";

    public static final int MAX_ERROR_LENGTH = 1024;

    private DeadLetterHeaders() {
    }
}
