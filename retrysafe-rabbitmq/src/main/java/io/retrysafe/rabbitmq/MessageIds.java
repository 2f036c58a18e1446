package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.LongString;
import io.retrysafe.internal.Require;
import java.util.Map;

/**
 * Where a message's id comes from: the key under which the message is marked processed. The id
 * must be the same on every delivery and on every copy a producer's retry publishes, and different
 * for every other message. RabbitMQ has no id of its own that survives a producer's retry (a
 * delivery tag is per channel), so the producer sets one.
 *
 * <ul>
 * <li>{@link #messageIdProperty()} — the default: the AMQP {@code message-id} property
 *     ({@code BasicProperties.messageId}), which AMQP clients and Spring AMQP set for this purpose.
 * <li>{@link #header(String)} — a header the producer sets, such as {@code idempotency-key} or
 *     CloudEvents {@code cloudEvents:id}.
 * </ul>
 */
@FunctionalInterface
public interface MessageIds {

    /** The message's id, or null when it has none (such a message is dead-lettered, never processed unprotected). */
    String idOf(Delivery delivery);

    /** The {@code message-id} property of the message's basic properties. */
    static MessageIds messageIdProperty() {
        return new MessageIds() {
            @Override
            public String idOf(Delivery delivery) {
                AMQP.BasicProperties properties = delivery.getProperties();
                return properties == null ? null : properties.getMessageId();
            }

            @Override
            public String toString() {
                return "message-id";
            }
        };
    }

    /**
     * Header {@code name} (matched exactly, as AMQP does): a string, or a number given as its decimal
     * text. A header of another type (a table, a list, bytes, a decimal fraction) is not an id:
     * reading it fails, and the message is dead-lettered as having an invalid id.
     */
    static MessageIds header(String name) {
        Require.notNull(name, "name");
        if (name.isEmpty() || name.length() > 255) {
            throw new IllegalArgumentException("an AMQP header name must have 1 to 255 characters, but was \""
                    + name + "\"");
        }
        return new MessageIds() {
            @Override
            public String idOf(Delivery delivery) {
                AMQP.BasicProperties properties = delivery.getProperties();
                Map<String, Object> headers = properties == null ? null : properties.getHeaders();
                Object value = headers == null ? null : headers.get(name);
                if (value == null) {
                    return null;
                } else if (value instanceof LongString text) {
                    return text.toString();
                } else if (value instanceof String text) {
                    return text;
                } else if (value instanceof Number number && !(value instanceof Double || value instanceof Float)) {
                    return number.toString();
                }
                throw new IllegalArgumentException("header " + name + " must be a string or an integer, but was a "
                        + value.getClass().getSimpleName());
            }

            @Override
            public String toString() {
                return "header(" + name + ")";
            }
        };
    }
}
