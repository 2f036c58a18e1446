package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Delivery;
import java.util.Map;

/** What a delivery tells about itself. */
final class Deliveries {
    /** The header a quorum queue sets on a message it delivers again: how often it was returned before. */
    static final String X_DELIVERY_COUNT = "x-delivery-count";

    private Deliveries() {
    }

    /**
     * How often this message was delivered, this delivery included, or 0 when the broker does not
     * say. A first delivery is 1 on every queue; a quorum queue counts the returns before
     * ({@value #X_DELIVERY_COUNT}, absent on the first delivery); a classic queue only tells that it
     * delivered the message before ({@code redelivered}), not how often: 0.
     */
    static int deliveryCount(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.getProperties();
        Map<String, Object> headers = properties == null ? null : properties.getHeaders();
        Object count = headers == null ? null : headers.get(X_DELIVERY_COUNT);
        if (count instanceof Number n && n.longValue() >= 0) {
            return (int) Math.min(n.longValue() + 1, Integer.MAX_VALUE);
        }
        return delivery.getEnvelope().isRedeliver() ? 0 : 1;
    }

    /** {@code queue#deliveryTag}, for logs. */
    static String describe(String queue, Delivery delivery) {
        return "message " + queue + "#" + delivery.getEnvelope().getDeliveryTag()
                + (delivery.getEnvelope().isRedeliver() ? " (redelivered)" : "");
    }
}
