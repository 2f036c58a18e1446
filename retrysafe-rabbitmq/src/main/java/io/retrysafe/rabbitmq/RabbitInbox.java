package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterSink;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * RabbitMQ's adapter on the {@link Inbox}: each delivery's message id is marked processed in the
 * same database transaction as the handler's writes, and a {@link RetrySafeRabbitConsumer}
 * acknowledges the delivery only after that transaction committed.
 *
 * <pre>{@code
 * Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("billing").build())).build();
 * RabbitInbox rabbit = RabbitInbox.builder(inbox, (delivery, jdbc, attempt) -> bill(jdbc, delivery.getBody()))
 *         .consumerName("billing")
 *         .deadLetters(ConfirmedPublisher.of(connection), "", queue -> queue + ".dlq")
 *         .build();
 * RetrySafeRabbitConsumer consumer = RetrySafeRabbitConsumer.builder(connection, rabbit).queue("orders").start();
 * }</pre>
 *
 * <p>The key is the message id ({@link MessageIds}: the AMQP {@code message-id} property by
 * default) in the scope {@code rabbitmq:<consumer name>:<queue>}; the fingerprint is the SHA-256 of
 * the body. What the inbox answers becomes:
 *
 * <table class="striped">
 * <caption>What each result does to the delivery</caption>
 * <thead><tr><th scope="col">inbox result</th><th scope="col">RabbitMQ</th></tr></thead>
 * <tbody>
 * <tr><td>processed (the transaction committed), replayed</td><td>{@code basicAck}</td></tr>
 * <tr><td>dead letter (no id, invalid id, reused id, handler failed on every attempt)</td>
 *     <td>published with the dead-letter headers to the dead-letter exchange, confirmed by the broker,
 *     then {@code basicAck}</td></tr>
 * <tr><td>retry later (database down, another delivery holds the id, the dead letter not confirmed)</td>
 *     <td>processed again after the delay, before the queue's next message; on close,
 *     {@code basicNack} with requeue</td></tr>
 * </tbody>
 * </table>
 *
 * <p>Retries of a failed handler happen in the process ({@link RetryStyle#IN_PROCESS}, the only
 * style accepted): RabbitMQ cannot requeue a message with a delay, a requeued message is delivered
 * again at once (a busy loop against a failing handler), and a classic queue does not count
 * deliveries. The queue waits behind the message meanwhile, which keeps its order.
 *
 * <p>Immutable and thread-safe; one instance serves any number of consumers and queues.
 */
public final class RabbitInbox {
    /** The scope of every message's key: {@code rabbitmq:<consumer name>:<queue>}. */
    public static final String BROKER = "rabbitmq";
    /** The dead-letter routing key for a queue, by default: the queue's name and this. */
    public static final String DEFAULT_DEAD_LETTER_SUFFIX = ".dlq";


    private final Inbox inbox;
    private final String consumerName;
    private final DeliveryHandler handler;
    private final MessageIds messageIds;
    private final ConfirmedPublisher deadLetters;
    private final String deadLetterExchange;
    private final UnaryOperator<String> deadLetterRoutingKey;

    private RabbitInbox(Builder b) {
        this.inbox = b.inbox;
        this.consumerName = b.consumerName;
        this.handler = b.handler;
        this.messageIds = b.messageIds != null ? b.messageIds : MessageIds.messageIdProperty();
        this.deadLetters = b.deadLetters;
        this.deadLetterExchange = b.deadLetterExchange;
        this.deadLetterRoutingKey = b.deadLetterRoutingKey;
    }

    /**
     * @param inbox   the inbox on the database the handler writes to; {@link RetryStyle#IN_PROCESS}
     * @param handler the work for one message
     * @throws IllegalArgumentException if the inbox retries by broker redelivery
     */
    public static Builder builder(Inbox inbox, DeliveryHandler handler) {
        return new Builder(inbox, Require.notNull(handler, "handler"));
    }

    /** Without a handler of its own, for {@link #process(String, Delivery, DeliveryHandler)}; no consumer takes it. */
    public static Builder builder(Inbox inbox) {
        return new Builder(inbox, null);
    }

    boolean hasHandler() {
        return handler != null;
    }

    /** The scope of the keys of messages consumed from {@code queue} by {@code consumerName}. */
    public static String scope(String consumerName, String queue) {
        return Inbox.scope(BROKER, consumerName, queue);
    }

    /**
     * Refuses a queue whose messages this inbox could never take: its name makes their scope too long.
     * A consumer checks it when it starts, rather than failing at each message.
     */
    void checkQueue(String queue) {
        try {
            scope(consumerName, queue);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("queue " + queue + " cannot be consumed by consumerName " + consumerName
                    + ": " + e.getMessage(), e);
        }
    }

    /** The key a message of {@code queue} with id {@code messageId} is stored under. */
    public IdempotencyKey key(String queue, String messageId) {
        return inbox.keyRules().key(scope(consumerName, queue), messageId);
    }

    /**
     * Processes one delivery from {@code queue} with the inbox and the builder's handler; never throws
     * for what the handler or the database do.
     *
     * @throws IllegalStateException if the builder was given no handler
     */
    public InboxResult process(String queue, Delivery delivery) {
        if (handler == null) {
            throw new IllegalStateException("this RabbitInbox has no handler of its own: call process(queue, delivery, "
                    + "handler)");
        }
        return process(queue, delivery, handler);
    }

    /** The same with the handler of this call: a framework's listener, say. */
    public InboxResult process(String queue, Delivery delivery, DeliveryHandler handler) {
        Require.notNull(queue, "queue");
        Require.notNull(delivery, "delivery");
        Require.notNull(handler, "handler");
        DeadLetterSink deadLetters = deadLetter -> publishDeadLetter(queue, delivery, deadLetter);
        String id;
        try {
            id = messageIds.idOf(delivery);
        } catch (RuntimeException e) {
            // Not an id at all (a table, a fraction): dead-lettered as invalid, like an id that breaks the key rules.
            return inbox.refuse(toInbox(queue, delivery, null), new InvalidKeyException(InvalidKeyException.Rule.MALFORMED,
                    "reading the message id with " + messageIds + " failed: " + e.getMessage()), deadLetters);
        }
        return inbox.process(toInbox(queue, delivery, id),
                (connection, attempt) -> handler.handle(delivery, connection, attempt), deadLetters);
    }

    /** What the consumer does with the result. */
    Settlement settle(String queue, Delivery delivery) {
        InboxResult result = process(queue, delivery);
        if (result instanceof InboxResult.RetryLater later) {
            return new Settlement.Retry(later.delay(), later.reason().tagValue() + ": " + later.detail());
        }
        return Settlement.ACK;
    }

    private io.retrysafe.inbox.Delivery toInbox(String queue, Delivery delivery, String id) {
        return new io.retrysafe.inbox.Delivery(scope(consumerName, queue), id, delivery.getBody(),
                position(queue, delivery), Deliveries.deliveryCount(delivery));
    }

    /** {@code <queue> delivery <tag>}: a delivery tag is per channel, so this says which delivery, not which message. */
    private static String position(String queue, Delivery delivery) {
        return queue + " delivery " + delivery.getEnvelope().getDeliveryTag();
    }

    private void publishDeadLetter(String queue, Delivery delivery, InboxResult.DeadLetter deadLetter)
            throws IOException, InterruptedException {
        AMQP.BasicProperties original = delivery.getProperties() != null ? delivery.getProperties()
                : new AMQP.BasicProperties();
        Map<String, Object> headers = new HashMap<>();
        if (original.getHeaders() != null) {
            original.getHeaders().forEach((name, value) -> {
                // The delivery count is the quorum queue's, set on delivery: not the dead letter's.
                if (!name.equals(Deliveries.X_DELIVERY_COUNT) && !DeadLetterHeaders.NAMES.contains(name)) {
                    headers.put(name, value);
                }
            });
        }
        headers.putAll(deadLetter.headers());
        AMQP.BasicProperties properties = original.builder().headers(headers)
                .deliveryMode(original.getDeliveryMode() != null ? original.getDeliveryMode() : 2).build();
        deadLetters.publish(deadLetterExchange, deadLetterRoutingKey.apply(queue), properties, delivery.getBody());
    }

    public String consumerName() {
        return consumerName;
    }

    public Inbox inbox() {
        return inbox;
    }

    public MessageIds messageIds() {
        return messageIds;
    }

    /** The dead-letter routing key for messages of {@code queue}. */
    public String deadLetterRoutingKey(String queue) {
        return deadLetterRoutingKey.apply(Require.notNull(queue, "queue"));
    }

    String name() {
        return inbox.engine().name();
    }

    @Override
    public String toString() {
        return "RabbitInbox[" + inbox + ", consumerName=" + consumerName + ", messageIds=" + messageIds
                + ", deadLetterExchange=" + (deadLetterExchange.isEmpty() ? "(default)" : deadLetterExchange) + "]";
    }

    /** Builds a {@link RabbitInbox}; each value may be set once. */
    public static final class Builder {
        private final Inbox inbox;
        private final DeliveryHandler handler;
        private String consumerName;
        private MessageIds messageIds;
        private ConfirmedPublisher deadLetters;
        private String deadLetterExchange;
        private UnaryOperator<String> deadLetterRoutingKey;

        private Builder(Inbox inbox, DeliveryHandler handler) {
            this.inbox = Require.notNull(inbox, "inbox");
            this.handler = handler;
            if (inbox.retryStyle() != RetryStyle.IN_PROCESS) {
                throw new IllegalArgumentException("RabbitMQ retries a failed handler in the process (it cannot requeue "
                        + "with a delay, and a classic queue does not count deliveries): the inbox's retry style must be "
                        + "IN_PROCESS, but was " + inbox.retryStyle());
            }
        }

        /**
         * The consuming application or service: part of the scope, so that two services consuming
         * copies of a message (each from its own queue) each process it once. Required.
         */
        public Builder consumerName(String consumerName) {
            Require.unset(this.consumerName, "consumerName");
            this.consumerName = Require.notBlank(consumerName, "consumerName");
            return this;
        }

        /** Where the message id comes from; by default the AMQP {@code message-id} property. */
        public Builder messageIds(MessageIds messageIds) {
            Require.unset(this.messageIds, "messageIds");
            this.messageIds = Require.notNull(messageIds, "messageIds");
            return this;
        }

        /**
         * Where messages that cannot be processed go: published with {@code publisher} to
         * {@code exchange} ({@code ""}: the default exchange, which routes to the queue named by the
         * routing key) with the routing key {@code routingKey} gives for the message's queue. A queue
         * must take it: a dead letter no queue takes is a failed publish, and the message stays.
         * Required.
         */
        public Builder deadLetters(ConfirmedPublisher publisher, String exchange, UnaryOperator<String> routingKey) {
            Require.unset(this.deadLetters, "deadLetters");
            this.deadLetters = Require.notNull(publisher, "publisher");
            this.deadLetterExchange = Require.notNull(exchange, "exchange");
            this.deadLetterRoutingKey = Require.notNull(routingKey, "routingKey");
            return this;
        }

        /** Dead letters to the queue named {@code <queue>}{@value #DEFAULT_DEAD_LETTER_SUFFIX}, through the default exchange. */
        public Builder deadLetters(ConfirmedPublisher publisher) {
            return deadLetters(publisher, "", queue -> queue + DEFAULT_DEAD_LETTER_SUFFIX);
        }

        /** @throws IllegalStateException if the consumer name or the dead letters are not set */
        public RabbitInbox build() {
            Require.set(consumerName, "consumerName", "it is part of the scope rabbitmq:<consumer name>:<queue>");
            Require.set(deadLetters, "deadLetters", "a message given up must go somewhere, or the queue stops behind it");
            String scopeWithoutQueue = BROKER + ":" + consumerName + ":";
            if (scopeWithoutQueue.length() >= IdempotencyKey.MAX_SCOPE_LENGTH) {
                throw new IllegalStateException("consumerName leaves no room for a queue in the scope rabbitmq:<consumer"
                        + " name>:<queue> (at most " + IdempotencyKey.MAX_SCOPE_LENGTH + " characters), but had "
                        + consumerName.length() + " characters");
            }
            return new RabbitInbox(this);
        }
    }
}
