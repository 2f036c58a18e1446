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
     * How often this message was delivered, this delivery included. A quorum queue counts returns
     * ({@value #X_DELIVERY_COUNT}, absent on the first delivery); a classic queue only says whether
     * it delivered the message before ({@code redelivered}), which counts as 2.
     */
    static long deliveryCount(Delivery delivery) {
        AMQP.BasicProperties properties = delivery.getProperties();
        Map<String, Object> headers = properties == null ? null : properties.getHeaders();
        Object count = headers == null ? null : headers.get(X_DELIVERY_COUNT);
        if (count instanceof Number n && n.longValue() >= 0) {
            return n.longValue() + 1;
        }
        return delivery.getEnvelope().isRedeliver() ? 2 : 1;
    }

    /** {@code queue#deliveryTag}, for logs. */
    static String describe(String queue, Delivery delivery) {
        return "message " + queue + "#" + delivery.getEnvelope().getDeliveryTag()
                + (delivery.getEnvelope().isRedeliver() ? " (redelivered)" : "");
    }
}
