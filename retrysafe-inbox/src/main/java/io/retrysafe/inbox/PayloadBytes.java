package io.retrysafe.inbox;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Turns a message's payload into the bytes its fingerprint is computed over. It must give the
 * same bytes for the same message every time (a serializer, not {@code toString()}).
 *
 * <p>{@link #STANDARD}, the one rule every adapter starts from: {@code byte[]} as it is,
 * {@link String} as UTF-8, {@link ByteBuffer} its remaining bytes (not consumed), {@code null} (a
 * message without a body, a Kafka tombstone) as no bytes. Any other type cannot be fingerprinted:
 * it throws, and the inbox dead-letters the message at once as
 * {@link DeadLetterReason#UNREADABLE_PAYLOAD} — never fingerprinted as empty bytes, which would let
 * two different messages with one id pass as a redelivery. An adapter that knows its broker's
 * types converts them before (Kafka's {@code Bytes} to {@code byte[]}); an application with other
 * types gives its own, usually its serializer.
 */
@FunctionalInterface
public interface PayloadBytes {

    PayloadBytes STANDARD = PayloadBytes::standard;

    /**
     * @throws Exception when the payload cannot be had as bytes: the message is dead-lettered
     */
    byte[] bytes(Object payload) throws Exception;

    private static byte[] standard(Object payload) {
        if (payload == null) {
            return new byte[0];
        } else if (payload instanceof byte[] bytes) {
            return bytes;
        } else if (payload instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        } else if (payload instanceof ByteBuffer buffer) {
            ByteBuffer copy = buffer.duplicate();
            byte[] bytes = new byte[copy.remaining()];
            copy.get(bytes);
            return bytes;
        }
        throw new UnreadablePayloadException("cannot fingerprint a payload of type " + payload.getClass().getName()
                + "; give the consumer a payload-bytes function, for example the serializer");
    }

    /** {@link #STANDARD} refused a payload's type. */
    final class UnreadablePayloadException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        UnreadablePayloadException(String message) {
            super(message);
        }
    }
}
