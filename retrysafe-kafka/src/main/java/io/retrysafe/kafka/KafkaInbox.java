package io.retrysafe.kafka;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterSink;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxHandler;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.internal.Require;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;

/**
 * Processes each Kafka record at most once per consumer group through the {@link Inbox}: the
 * message id is marked processed in the same database transaction as the handler's writes, so a
 * redelivered record or a producer's duplicate is skipped. Commit the record's offset only once
 * {@link #process} returned a result that {@linkplain InboxResult#isDone() is done};
 * {@link RetrySafeKafkaConsumer} does that.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("orders").build())).build();
 * KafkaInbox<String, String> processor = KafkaInbox
 *         .<String, String>builder(inbox, (record, connection, attempt) -> ship(connection, record.value()))
 *         .consumerGroup("shipping")
 *         .deadLetters(DeadLetterPublisher.of(producer))
 *         .build();
 * InboxResult result = processor.process(record);   // from a poll loop, or a Spring listener
 * }</pre>
 *
 * <p>What is Kafka's here, shared with the Spring Boot starter's listeners: the {@linkplain #scope(String,
 * String) scope}, the record as a {@linkplain #process(Inbox, String, MessageIds, ConsumerRecord, InboxHandler,
 * DeadLetterSink) delivery}, its {@linkplain #deadLetter dead letter}. Everything else (retries on the caller's
 * thread, reasons, headers, the payload rule) is the inbox's: keep its {@code maxAttempts} and back-off well
 * inside the consumer's {@code max.poll.interval.ms}. Thread-safe.
 */
public final class KafkaInbox<K, V> {
    public static final String DEFAULT_DEAD_LETTER_SUFFIX = ".DLT";
    /** The scope's prefix: {@code kafka:<consumer group>:<topic>}. */
    public static final String SCOPE_PREFIX = "kafka:";

    private final Inbox inbox;
    private final String consumerGroup;
    private final RecordHandler<K, V> handler;
    private final MessageIds messageIds;
    private final DeadLetterPublisher<K, V> deadLetters;
    private final UnaryOperator<String> deadLetterTopic;

    private KafkaInbox(Builder<K, V> b) {
        this.inbox = b.inbox;
        this.consumerGroup = b.consumerGroup;
        this.handler = b.handler;
        this.messageIds = b.messageIds != null ? b.messageIds : MessageIds.defaultHeader();
        this.deadLetters = b.deadLetters;
        this.deadLetterTopic = b.deadLetterTopic != null ? b.deadLetterTopic : topic -> topic + DEFAULT_DEAD_LETTER_SUFFIX;
    }

    /**
     * @param inbox   the inbox on the database the handler writes to, {@link RetryStyle#IN_PROCESS} (a
     *                record has no delivery count); its engine's retention is how long a message id is
     *                remembered, and must outlast every redelivery and producer retry (the default 24 h)
     * @param handler the work for one record
     * @throws IllegalArgumentException if the inbox retries by broker redelivery
     */
    public static <K, V> Builder<K, V> builder(Inbox inbox, RecordHandler<K, V> handler) {
        return new Builder<>(inbox, handler);
    }

    /**
     * Processes one record through the inbox ({@link Inbox#process}). Blocks through the handler's
     * retries and the dead-letter send; returns a result that is done, or {@link InboxResult.RetryLater}.
     * An {@link Error} thrown by the handler propagates.
     *
     * @throws IllegalStateException if the record's topic makes a scope longer than a key's scope may be
     */
    public InboxResult process(ConsumerRecord<K, V> record) {
        Require.notNull(record, "record");
        return process(inbox, scope(record.topic()), messageIds, record,
                (connection, attempt) -> handler.handle(record, connection, attempt),
                deadLetter -> deadLetters.publish(deadLetter(record, deadLetterTopic(record.topic()), deadLetter)));
    }

    /**
     * One record through {@code inbox} as every Kafka consumer of RetrySafe hands it over, with the
     * handler and dead-letter sink of this call (a framework's listener, say): the id
     * {@code messageIds} reads (one it cannot read is refused), the value ({@link Bytes} as its bytes),
     * the {@linkplain #position position}.
     */
    public static InboxResult process(Inbox inbox, String scope, MessageIds messageIds, ConsumerRecord<?, ?> record,
            InboxHandler handler, DeadLetterSink deadLetters) {
        Object payload = record.value() instanceof Bytes bytes ? bytes.get() : record.value();
        String messageId;
        try {
            messageId = messageIds.idOf(record);
        } catch (InvalidKeyException e) {
            return inbox.refuse(Delivery.of(scope, null, payload, position(record)), e, deadLetters);
        }
        return inbox.process(Delivery.of(scope, messageId, payload, position(record)), handler, deadLetters);
    }

    /**
     * The dead letter of {@code record}: a copy (key, value, its own headers) on {@code topic}, with the
     * inbox's {@link DeadLetterHeaders} in place of any it carried.
     */
    public static <K, V> ProducerRecord<K, V> deadLetter(ConsumerRecord<? extends K, ? extends V> record, String topic,
            InboxResult.DeadLetter deadLetter) {
        Headers headers = new RecordHeaders(record.headers().toArray());
        DeadLetterHeaders.NAMES.forEach(headers::remove);
        headers(deadLetter.headers()).forEach(headers::add);
        return new ProducerRecord<>(topic, null, null, record.key(), record.value(), headers);
    }

    /** The inbox's dead-letter headers as Kafka headers, in UTF-8. */
    public static Headers headers(Map<String, String> deadLetterHeaders) {
        Headers headers = new RecordHeaders();
        deadLetterHeaders.forEach((name, value) -> headers.add(name, value.getBytes(StandardCharsets.UTF_8)));
        return headers;
    }

    /** Where a record is, in logs and dead letters: {@code <topic>-<partition>@<offset>}. */
    public static String position(ConsumerRecord<?, ?> record) {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }

    /**
     * The scope of the message ids read from {@code topic}: {@code kafka:<consumer group>:<topic>}.
     *
     * @throws IllegalStateException if it is longer than {@value IdempotencyKey#MAX_SCOPE_LENGTH} characters
     */
    public String scope(String topic) {
        Require.notNull(topic, "topic");
        try {
            return scope(consumerGroup, topic);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(e.getMessage() + " (group " + consumerGroup + ", topic " + topic
                    + "); use a shorter group id or topic name", e);
        }
    }

    /**
     * The scope of the message ids {@code consumerGroup} reads from {@code topic}, shared by every Kafka
     * consumer of RetrySafe: {@code kafka:<consumer group>:<topic>}.
     *
     * @throws IllegalArgumentException if it is longer than {@value IdempotencyKey#MAX_SCOPE_LENGTH} characters
     */
    public static String scope(String consumerGroup, String topic) {
        return Inbox.scope("kafka", consumerGroup, topic);
    }

    /** The key a record of {@code topic} with message id {@code messageId} is stored under. */
    public IdempotencyKey key(String topic, String messageId) {
        return inbox.keyRules().key(scope(topic), messageId);
    }

    public String consumerGroup() {
        return consumerGroup;
    }

    /** The inbox the processor runs. */
    public Inbox inbox() {
        return inbox;
    }

    /** The engine the inbox runs; its listener hears every record. */
    public RetrySafe engine() {
        return inbox.engine();
    }

    public MessageIds messageIds() {
        return messageIds;
    }

    /** The dead-letter topic for records of {@code topic}. */
    public String deadLetterTopic(String topic) {
        return deadLetterTopic.apply(Require.notNull(topic, "topic"));
    }

    @Override
    public String toString() {
        return "KafkaInbox[consumerGroup=" + consumerGroup + ", messageIds=" + messageIds + ", " + inbox + "]";
    }

    /** Builds a {@link KafkaInbox}; each value may be set once. Retries, back-off and payload rule are the {@link Inbox}'s. */
    public static final class Builder<K, V> {
        private final Inbox inbox;
        private final RecordHandler<K, V> handler;
        private String consumerGroup;
        private MessageIds messageIds;
        private DeadLetterPublisher<K, V> deadLetters;
        private UnaryOperator<String> deadLetterTopic;

        private Builder(Inbox inbox, RecordHandler<K, V> handler) {
            this.inbox = Require.notNull(inbox, "inbox");
            this.handler = Require.notNull(handler, "handler");
            if (inbox.retryStyle() != RetryStyle.IN_PROCESS) {
                throw new IllegalArgumentException("Kafka retries a failed handler in the consumer's thread (a record "
                        + "has no delivery count to number redeliveries by): the inbox's retry style must be IN_PROCESS, "
                        + "but was " + inbox.retryStyle());
            }
        }

        /** The consumer's {@code group.id}: each group processes a message once. Required. */
        public Builder<K, V> consumerGroup(String consumerGroup) {
            Require.unset(this.consumerGroup, "consumerGroup");
            this.consumerGroup = Require.notBlank(consumerGroup, "consumerGroup");
            return this;
        }

        /** Where the message id comes from; by default header {@value MessageIds#DEFAULT_HEADER}. */
        public Builder<K, V> messageIds(MessageIds messageIds) {
            Require.unset(this.messageIds, "messageIds");
            this.messageIds = Require.notNull(messageIds, "messageIds");
            return this;
        }

        /** Where records that cannot be processed go. Required. */
        public Builder<K, V> deadLetters(DeadLetterPublisher<K, V> deadLetters) {
            Require.unset(this.deadLetters, "deadLetters");
            this.deadLetters = Require.notNull(deadLetters, "deadLetters");
            return this;
        }

        /** The dead-letter topic's name for a record's topic; by default the topic + {@value #DEFAULT_DEAD_LETTER_SUFFIX}. */
        public Builder<K, V> deadLetterTopic(UnaryOperator<String> deadLetterTopic) {
            Require.unset(this.deadLetterTopic, "deadLetterTopic");
            this.deadLetterTopic = Require.notNull(deadLetterTopic, "deadLetterTopic");
            return this;
        }

        /** @throws IllegalStateException if the consumer group or the dead letters are not set */
        public KafkaInbox<K, V> build() {
            Require.set(consumerGroup, "consumerGroup", "it is part of the scope kafka:<consumer group>:<topic>");
            Require.set(deadLetters, "deadLetters", "a message given up must go somewhere, or its partition stops "
                    + "behind it");
            String scopeWithoutTopic = SCOPE_PREFIX + consumerGroup + ":";
            if (scopeWithoutTopic.length() >= IdempotencyKey.MAX_SCOPE_LENGTH) {
                throw new IllegalStateException("consumerGroup leaves no room for a topic in the scope kafka:<group>:"
                        + "<topic> (at most " + IdempotencyKey.MAX_SCOPE_LENGTH + " characters), but had "
                        + consumerGroup.length() + " characters");
            }
            return new KafkaInbox<>(this);
        }
    }
}
