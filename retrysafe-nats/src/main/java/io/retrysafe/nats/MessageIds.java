package io.retrysafe.nats;

import io.nats.client.Message;
import io.nats.client.impl.Headers;
import io.retrysafe.internal.Require;

/**
 * Where a message's id comes from: the key under which the message is marked processed. The id
 * must be the same on every delivery and on every copy a producer's retry creates, and different
 * for every other message.
 *
 * <ul>
 * <li>{@link #natsMsgId()} — the default: the {@code Nats-Msg-Id} header the producer sets (see
 *     {@link IdempotentPublisher}), on which the server also drops duplicates within the stream's
 *     duplicate window. Covers redeliveries <em>and</em> producer retries while the record is retained.
 * <li>{@link #header(String)} — another header the producer sets, such as {@code idempotency-key}
 *     or CloudEvents {@code ce-id}; the server does not deduplicate on it.
 * <li>{@link #streamSequence()} — for producers that set no id: redeliveries only.
 * </ul>
 */
@FunctionalInterface
public interface MessageIds {

    /** The header JetStream deduplicates on. */
    String NATS_MSG_ID = "Nats-Msg-Id";

    /**
     * The message's id, or null when it has none: such a message is dead-lettered
     * ({@code missing-message-id}) and terminated, never processed unprotected. A message whose id
     * cannot be read throws: it is dead-lettered too, as {@code invalid-message-id} (or as the
     * {@link io.retrysafe.InvalidKeyException} thrown says).
     */
    String idOf(Message message);

    /** The {@code Nats-Msg-Id} header. */
    static MessageIds natsMsgId() {
        return header(NATS_MSG_ID);
    }

    /** The first value of header {@code name} (matched exactly, as NATS does). */
    static MessageIds header(String name) {
        Require.notNull(name, "name");
        if (name.isEmpty() || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != ':')) {
            throw new IllegalArgumentException("a header name must be printable ASCII without spaces or ':', but was \""
                    + name + "\"");
        }
        return new MessageIds() {
            @Override
            public String idOf(Message message) {
                Headers headers = message.getHeaders();
                return headers == null ? null : headers.getFirst(name);
            }

            @Override
            public String toString() {
                return "header(" + name + ")";
            }
        };
    }

    /**
     * The stream sequence, in decimal. Catches redeliveries (a crash before the acknowledgement,
     * an expired {@code ack_wait}, a nak), but not a producer's duplicate that arrived after the
     * stream's duplicate window: that copy has its own sequence.
     *
     * <p>Sequences start again at 1 in a stream that is deleted and created again under the same
     * name: within the records' retention, the new messages would be taken for the old ones. Use
     * a new consumer name (it is part of the scope) after recreating a stream.
     */
    static MessageIds streamSequence() {
        return new MessageIds() {
            @Override
            public String idOf(Message message) {
                return Long.toString(message.metaData().streamSequence());
            }

            @Override
            public String toString() {
                return "streamSequence";
            }
        };
    }
}
