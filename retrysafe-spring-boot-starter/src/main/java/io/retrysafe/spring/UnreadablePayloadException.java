package io.retrysafe.spring;

/**
 * A record whose value has no bytes to fingerprint (an object a deserializer made, without a
 * {@code PayloadBytes} bean that serializes it): not processed, and not worth retrying, so Spring
 * Kafka's error handler sends it to its recoverer at once. A fingerprint of no bytes would let two
 * different messages with one id pass as a redelivery.
 */
public final class UnreadablePayloadException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public UnreadablePayloadException(String message) {
        super(message);
    }
}
