package io.retrysafe.rabbitmq;

import com.rabbitmq.client.Delivery;

/** What a {@link RetrySafeRabbitConsumer} runs for each delivery; it never throws for what a handler or a store do. */
@FunctionalInterface
interface DeliveryProcessor {

    /** Processes one delivery from {@code queue}; the consumer acknowledges it, or processes it again, as answered. */
    Settlement process(String queue, Delivery delivery);
}
