package io.retrysafe.inbox;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Require;

/**
 * One delivery of one message, as a broker adapter hands it to {@link Inbox#process}.
 *
 * @param scope         where the message id is unique, built by the adapter from the broker's names:
 *                      {@code kafka:<consumer group>:<topic>}, {@code nats:<stream>:<consumer>}, … (see
 *                      {@link Inbox#scope}); rows already stored under a scope stay valid only while it is
 *                      built the same way
 * @param messageId     the message's id as the adapter read it; {@code null} when it has none
 * @param payload       what the fingerprint is computed over, turned into bytes by the inbox's
 *                      {@link PayloadBytes}; {@code null} for a message without a body
 * @param position      where the message sits, for logs, the dead letter and replay:
 *                      {@code topic-partition@offset}, {@code stream sequence 42}, …; never the id or the payload
 * @param deliveryCount how often the broker has delivered this message, this delivery included, when it
 *                      counts (JetStream, RabbitMQ quorum queues); {@link #UNKNOWN_DELIVERY_COUNT} when it does not
 */
public record Delivery(String scope, String messageId, Object payload, String position, int deliveryCount) {

    /** The broker does not count deliveries (Kafka). */
    public static final int UNKNOWN_DELIVERY_COUNT = 0;

    public Delivery {
        Require.notBlank(scope, "scope");
        if (scope.length() > IdempotencyKey.MAX_SCOPE_LENGTH) {
            throw new IllegalArgumentException("scope must have at most " + IdempotencyKey.MAX_SCOPE_LENGTH
                    + " characters, but had " + scope.length() + ": " + scope + "; use shorter broker names");
        }
        Require.notNull(position, "position");
        if (deliveryCount < 0) {
            throw new IllegalArgumentException("deliveryCount must be at least 0 (0: unknown), but was "
                    + deliveryCount);
        }
    }

    /** A delivery from a broker that does not count deliveries. */
    public static Delivery of(String scope, String messageId, Object payload, String position) {
        return new Delivery(scope, messageId, payload, position, UNKNOWN_DELIVERY_COUNT);
    }

    /** This delivery with the broker's delivery count. */
    public Delivery withDeliveryCount(int deliveryCount) {
        return new Delivery(scope, messageId, payload, position, deliveryCount);
    }

    /** Whether the broker told how often it delivered the message. */
    public boolean isDeliveryCountKnown() {
        return deliveryCount != UNKNOWN_DELIVERY_COUNT;
    }

    /** Never the id nor the payload: logs and exceptions may show this. */
    @Override
    public String toString() {
        return "Delivery[scope=" + scope + ", position=" + position
                + (isDeliveryCountKnown() ? ", deliveryCount=" + deliveryCount : "") + "]";
    }
}
