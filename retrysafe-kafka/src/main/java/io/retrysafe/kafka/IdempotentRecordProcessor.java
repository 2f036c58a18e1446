package io.retrysafe.kafka;

import io.retrysafe.Attempt;
import io.retrysafe.Fingerprint;
import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomePolicy;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;

/**
 * Processes each Kafka record at most once per consumer group, in the database: the message id is
 * marked processed in the same transaction as the handler's writes (the inbox is RetrySafe's
 * records table), so a redelivered record or a producer's duplicate finds it there and is skipped.
 * Commit the record's offset only once {@link #process} returned a result that is
 * {@linkplain RecordResult#done() done}; {@link IdempotentConsumerLoop} does that.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * TransactionalRetrySafe inbox = TransactionalRetrySafe.of(RetrySafe.builder(store).name("orders").build());
 * IdempotentRecordProcessor<String, String> processor = IdempotentRecordProcessor
 *         .<String, String>builder(inbox, "shipping", (record, connection, attempt) -> ship(connection, record.value()))
 *         .deadLetters(DeadLetterPublisher.of(producer))
 *         .build();
 * RecordResult result = processor.process(record);   // from a poll loop, or a Spring listener
 * }</pre>
 *
 * <p>For each record: the message id ({@link MessageIdExtractor}, header {@code idempotency-key} by
 * default) becomes the key, scoped {@code kafka:<consumer group>:<topic>}, and the SHA-256 of the
 * value its fingerprint. Then one transaction on a pooled connection: claim the key, run the
 * handler on the same connection, store the outcome, commit ({@link TransactionalRetrySafe#execute}).
 *
 * <table class="striped">
 * <caption>Results</caption>
 * <thead><tr><th scope="col">what happened</th><th scope="col">result</th></tr></thead>
 * <tbody>
 * <tr><td>the handler ran and committed</td><td>{@link RecordResult.Processed}</td></tr>
 * <tr><td>the id was processed before, same payload</td><td>{@link RecordResult.Replayed}: skipped</td></tr>
 * <tr><td>another transaction holds the id (a rebalance), past the store's lock timeout; the database
 *     failed</td><td>{@link RecordResult.RetryLater}</td></tr>
 * <tr><td>the handler threw {@code maxAttempts} times (each rolled back, with backoff between)</td>
 *     <td>dead-lettered, {@link DeadLetterReason#HANDLER_FAILED}</td></tr>
 * <tr><td>no id; an invalid id; the id processed before with another payload</td>
 *     <td>dead-lettered at once, handler not run</td></tr>
 * <tr><td>the dead-letter topic did not acknowledge</td><td>{@link RecordResult.RetryLater}</td></tr>
 * </tbody>
 * </table>
 *
 * <p>Retries with backoff happen inside {@link #process}, on the caller's thread: keep
 * {@code maxAttempts} and the backoff well inside the consumer's {@code max.poll.interval.ms}.
 * Thread-safe; the handler may be called from several threads when the processor is shared.
 */
public final class IdempotentRecordProcessor<K, V> {
    public static final int DEFAULT_MAX_ATTEMPTS = 3;
    public static final Duration DEFAULT_BACKOFF = Duration.ofMillis(200);
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);
    public static final String DEFAULT_DEAD_LETTER_SUFFIX = ".DLT";
    /** The scope's prefix: {@code kafka:<consumer group>:<topic>}. */
    public static final String SCOPE_PREFIX = "kafka:";

    private static final System.Logger LOG = System.getLogger(IdempotentRecordProcessor.class.getName());
    private static final ResponseCodec<String> POSITION = ResponseCodec.utf8();

    private final TransactionalRetrySafe inbox;
    private final RetrySafe engine;
    private final String consumerGroup;
    private final RecordHandler<K, V> handler;
    private final DataSource dataSource;
    private final MessageIdExtractor messageIds;
    private final KeyRules keyRules;
    private final DeadLetterPublisher<K, V> deadLetters;
    private final UnaryOperator<String> deadLetterTopic;
    private final int maxAttempts;
    private final Duration backoff;
    private final Duration maxBackoff;
    private final Function<? super V, byte[]> valueBytes;
    private final RecordProcessorListener listener;

    private IdempotentRecordProcessor(Builder<K, V> b) {
        RetrySafe given = b.inbox.engine();
        // Every outcome of a handler that returned is kept: there is no status to judge it by.
        this.engine = given.with(OperationPolicy.from(given.policy()).outcomePolicy(OutcomePolicy.STORE_ALL).build());
        this.inbox = TransactionalRetrySafe.of(engine);
        this.consumerGroup = b.consumerGroup;
        this.handler = b.handler;
        this.dataSource = b.dataSource != null ? b.dataSource : ((JdbcIdempotencyStore) given.store()).dataSource();
        this.messageIds = b.messageIds != null ? b.messageIds : MessageIdExtractor.defaultHeader();
        this.keyRules = b.keyRules != null ? b.keyRules : KeyRules.DEFAULT;
        this.deadLetters = b.deadLetters;
        this.deadLetterTopic = b.deadLetterTopic != null ? b.deadLetterTopic : topic -> topic + DEFAULT_DEAD_LETTER_SUFFIX;
        this.maxAttempts = b.maxAttempts != null ? b.maxAttempts : DEFAULT_MAX_ATTEMPTS;
        this.backoff = b.backoff != null ? b.backoff : DEFAULT_BACKOFF;
        this.maxBackoff = b.maxBackoff != null ? b.maxBackoff : DEFAULT_MAX_BACKOFF;
        this.valueBytes = b.valueBytes != null ? b.valueBytes : IdempotentRecordProcessor::defaultValueBytes;
        this.listener = b.listener != null ? b.listener : RecordProcessorListener.NONE;
    }

    /**
     * @param inbox the engine in transactional mode on the database the handler writes to; its
     *     policy's retention is how long a message id is remembered, and must outlast every
     *     redelivery and producer retry (the default 24 h)
     * @param consumerGroup the consumer's {@code group.id}: each group processes a message once
     * @param handler the work for one record
     */
    public static <K, V> Builder<K, V> builder(TransactionalRetrySafe inbox, String consumerGroup,
            RecordHandler<K, V> handler) {
        return new Builder<>(inbox, consumerGroup, handler);
    }

    /**
     * Processes one record: see the class comment. Blocks through the handler's retries and the
     * dead-letter send; returns a result {@linkplain RecordResult#done() done} or
     * {@link RecordResult.RetryLater}. An {@link Error} thrown by the handler propagates.
     *
     * @throws IllegalStateException if the record's topic makes a scope longer than a key's scope may be
     */
    public RecordResult process(ConsumerRecord<K, V> record) {
        Require.notNull(record, "record");
        RecordResult result = decide(record);
        guard("onResult", () -> listener.onResult(record, result));
        return result;
    }

    private RecordResult decide(ConsumerRecord<K, V> record) {
        String messageId;
        try {
            messageId = keyRules.validate(messageIds.messageId(record));
        } catch (InvalidKeyException e) {
            engine.listener().onInvalidKey(e);
            return deadLetter(record, e.rule() == InvalidKeyException.Rule.MISSING
                    ? DeadLetterReason.MISSING_MESSAGE_ID : DeadLetterReason.INVALID_MESSAGE_ID, e, 0);
        }
        IdempotencyKey key = key(record.topic(), messageId);
        Fingerprint fingerprint = Fingerprint.sha256(valueBytes.apply(record.value()));
        Exception lastFailure = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            if (attempt > 1 && !backOff(attempt)) {
                return new RecordResult.RetryLater(engine.policy().retryAfter(), "interrupted while backing off");
            }
            Outcome<String> outcome;
            try {
                outcome = runOnce(record, key, fingerprint, attempt);
            } catch (HandlerFailed failed) {
                lastFailure = failed.error;
                int n = attempt;
                guard("onHandlerFailure", () -> listener.onHandlerFailure(record, n, failed.error));
                LOG.log(Level.INFO, () -> prefix() + "handler failed on " + position(record) + " (key "
                        + key.digest() + "), attempt " + n + " of " + maxAttempts + ": " + failed.error);
                continue;
            } catch (StoreUnavailableException e) {
                // The handler ran but the commit failed: nothing of it was kept. Not the message's fault.
                return retryLater(record, e.retryAfter(), "the database failed: " + e.getMessage());
            } catch (SQLException e) {
                return retryLater(record, engine.policy().retryAfter(), "no database connection: " + e.getMessage());
            }
            if (outcome instanceof Outcome.Executed<String> || outcome instanceof Outcome.Unprotected<String>) {
                return new RecordResult.Processed(attempt);
            } else if (outcome instanceof Outcome.Replayed<String> replayed) {
                LOG.log(Level.DEBUG, () -> prefix() + "skipped " + position(record) + " (key " + key.digest()
                        + "): processed before at " + replayed.value());
                return new RecordResult.Replayed(replayed.value());
            } else if (outcome instanceof Outcome.InProgress<String> inProgress) {
                return retryLater(record, inProgress.retryAfter(),
                        "key " + key.digest() + " is held by another transaction (another consumer of the group?)");
            } else if (outcome instanceof Outcome.FingerprintMismatch<String>) {
                return deadLetter(record, DeadLetterReason.FINGERPRINT_MISMATCH, new FingerprintMismatchException(
                        "message id was processed before with a different payload"), 0);
            } else if (outcome instanceof Outcome.StoreUnavailable<String> unavailable) {
                return retryLater(record, unavailable.retryAfter(),
                        "the database failed: " + unavailable.failure().getMessage());
            }
            throw new IllegalStateException("unknown outcome " + outcome);
        }
        return deadLetter(record, DeadLetterReason.HANDLER_FAILED, lastFailure, maxAttempts);
    }

    private Outcome<String> runOnce(ConsumerRecord<K, V> record, IdempotencyKey key, Fingerprint fingerprint,
            int attempt) throws SQLException {
        Connection connection = dataSource.getConnection();
        try {
            return inbox.execute(connection, key, fingerprint, POSITION, engineAttempt -> {
                try {
                    // The engine's own count restarts at 1 in transactional mode (a failed attempt
                    // leaves no record); the handler is told this processor's count.
                    handler.handle(record, connection, new Attempt(key, attempt));
                } catch (Exception e) {
                    throw new HandlerFailed(e);
                }
                return position(record);
            });
        } finally {
            try {
                connection.close();
            } catch (SQLException e) {
                LOG.log(Level.WARNING, () -> prefix() + "could not return a connection to the pool: " + e);
            }
        }
    }

    /** Waits before attempt {@code attempt}; false if interrupted. */
    private boolean backOff(int attempt) {
        long delay = backoff.toMillis();
        for (int i = 2; i < attempt && delay < maxBackoff.toMillis(); i++) {
            delay *= 2;
        }
        try {
            Thread.sleep(Math.min(delay, maxBackoff.toMillis()));
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private RecordResult retryLater(ConsumerRecord<K, V> record, Duration retryAfter, String reason) {
        LOG.log(Level.INFO, () -> prefix() + position(record) + " is retried in " + retryAfter + ": " + reason);
        return new RecordResult.RetryLater(retryAfter, reason);
    }

    private RecordResult deadLetter(ConsumerRecord<K, V> record, DeadLetterReason reason, Exception cause,
            int attempts) {
        String topic = deadLetterTopic.apply(record.topic());
        Headers headers = new RecordHeaders(record.headers().toArray());
        for (String name : List.of(DeadLetterHeaders.REASON, DeadLetterHeaders.EXCEPTION, DeadLetterHeaders.ATTEMPTS,
                DeadLetterHeaders.ORIGINAL_TOPIC, DeadLetterHeaders.ORIGINAL_PARTITION,
                DeadLetterHeaders.ORIGINAL_OFFSET, DeadLetterHeaders.CONSUMER_GROUP)) {
            headers.remove(name);
        }
        add(headers, DeadLetterHeaders.REASON, reason.headerValue());
        add(headers, DeadLetterHeaders.EXCEPTION, describe(cause));
        add(headers, DeadLetterHeaders.ATTEMPTS, Integer.toString(attempts));
        add(headers, DeadLetterHeaders.ORIGINAL_TOPIC, record.topic());
        add(headers, DeadLetterHeaders.ORIGINAL_PARTITION, Integer.toString(record.partition()));
        add(headers, DeadLetterHeaders.ORIGINAL_OFFSET, Long.toString(record.offset()));
        add(headers, DeadLetterHeaders.CONSUMER_GROUP, consumerGroup);
        try {
            deadLetters.publish(new ProducerRecord<>(topic, null, null, record.key(), record.value(), headers));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return retryLater(record, engine.policy().retryAfter(), "interrupted while sending to dead-letter topic "
                    + topic);
        } catch (Exception e) {
            return retryLater(record, engine.policy().retryAfter(), "dead-letter topic " + topic
                    + " did not acknowledge: " + e);
        }
        LOG.log(Level.WARNING, () -> prefix() + position(record) + " sent to dead-letter topic " + topic + ": "
                + reason.headerValue() + (attempts > 0 ? " after " + attempts + " attempts" : "") + ": "
                + describe(cause));
        return new RecordResult.DeadLettered(reason, attempts, topic);
    }

    private static void add(Headers headers, String name, String value) {
        headers.add(name, value.getBytes(StandardCharsets.UTF_8));
    }

    private static String describe(Exception cause) {
        String text = cause == null ? "" : cause.getMessage() == null ? cause.getClass().getName()
                : cause.getClass().getName() + ": " + cause.getMessage();
        return text.length() <= DeadLetterHeaders.MAX_EXCEPTION_LENGTH ? text
                : text.substring(0, DeadLetterHeaders.MAX_EXCEPTION_LENGTH);
    }

    /**
     * The scope of the message ids read from {@code topic}: {@code kafka:<consumer group>:<topic>}.
     *
     * @throws IllegalStateException if it is longer than {@value IdempotencyKey#MAX_SCOPE_LENGTH} characters
     */
    public String scope(String topic) {
        Require.notNull(topic, "topic");
        String scope = SCOPE_PREFIX + consumerGroup + ":" + topic;
        if (scope.length() > IdempotencyKey.MAX_SCOPE_LENGTH) {
            throw new IllegalStateException("the scope kafka:<group>:<topic> must have at most "
                    + IdempotencyKey.MAX_SCOPE_LENGTH + " characters, but had " + scope.length() + " for group "
                    + consumerGroup + " and topic " + topic + "; use a shorter group id or topic name");
        }
        return scope;
    }

    /** The key a record of {@code topic} with message id {@code messageId} is stored under. */
    public IdempotencyKey key(String topic, String messageId) {
        return keyRules.key(scope(topic), messageId);
    }

    public String consumerGroup() {
        return consumerGroup;
    }

    /** The engine the processor runs, with {@link OutcomePolicy#STORE_ALL}; its listener hears every record. */
    public RetrySafe engine() {
        return engine;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public Duration backoff() {
        return backoff;
    }

    public Duration maxBackoff() {
        return maxBackoff;
    }

    public MessageIdExtractor messageIds() {
        return messageIds;
    }

    /** The dead-letter topic for records of {@code topic}. */
    public String deadLetterTopic(String topic) {
        return deadLetterTopic.apply(Require.notNull(topic, "topic"));
    }

    private static String position(ConsumerRecord<?, ?> record) {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }

    private String prefix() {
        return "[" + engine.name() + "] ";
    }

    private void guard(String method, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> prefix() + "listener " + listener.getClass().getName() + "." + method
                    + " threw; ignored", e);
        }
    }

    /**
     * The value's bytes for the fingerprint: {@code byte[]}, {@link String} (UTF-8), {@link ByteBuffer}
     * and {@link Bytes} as they are, {@code null} (a tombstone) as no bytes.
     *
     * @throws IllegalStateException for any other type: set {@link Builder#valueBytes}
     */
    static byte[] defaultValueBytes(Object value) {
        if (value == null) {
            return new byte[0];
        } else if (value instanceof byte[] bytes) {
            return bytes;
        } else if (value instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        } else if (value instanceof ByteBuffer buffer) {
            ByteBuffer copy = buffer.duplicate();
            byte[] bytes = new byte[copy.remaining()];
            copy.get(bytes);
            return bytes;
        } else if (value instanceof Bytes bytes) {
            return bytes.get();
        }
        throw new IllegalStateException("cannot fingerprint a record value of type " + value.getClass().getName()
                + "; set valueBytes(…) on the processor's builder, for example to the value serializer");
    }

    @Override
    public String toString() {
        return "IdempotentRecordProcessor[engine=" + engine.name() + ", consumerGroup=" + consumerGroup
                + ", messageIds=" + messageIds + ", maxAttempts=" + maxAttempts + ", backoff=" + backoff
                + ", maxBackoff=" + maxBackoff + "]";
    }

    /** A handler's exception, carried through the engine (which rolls back) to the retry loop. */
    private static final class HandlerFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private final transient Exception error;

        HandlerFailed(Exception error) {
            super(error);
            this.error = error;
        }
    }

    /** Builds an {@link IdempotentRecordProcessor}; each value may be set once. */
    public static final class Builder<K, V> {
        private final TransactionalRetrySafe inbox;
        private final String consumerGroup;
        private final RecordHandler<K, V> handler;
        private DataSource dataSource;
        private MessageIdExtractor messageIds;
        private KeyRules keyRules;
        private DeadLetterPublisher<K, V> deadLetters;
        private UnaryOperator<String> deadLetterTopic;
        private Integer maxAttempts;
        private Duration backoff;
        private Duration maxBackoff;
        private Function<? super V, byte[]> valueBytes;
        private RecordProcessorListener listener;

        private Builder(TransactionalRetrySafe inbox, String consumerGroup, RecordHandler<K, V> handler) {
            this.inbox = Require.notNull(inbox, "inbox");
            this.consumerGroup = Require.notBlank(consumerGroup, "consumerGroup");
            this.handler = Require.notNull(handler, "handler");
        }

        /** Where connections come from; by default the store's data source. It must be the store's database. */
        public Builder<K, V> dataSource(DataSource dataSource) {
            Require.unset(this.dataSource, "dataSource");
            this.dataSource = Require.notNull(dataSource, "dataSource");
            return this;
        }

        /** Where the message id comes from; by default header {@value MessageIdExtractor#DEFAULT_HEADER}. */
        public Builder<K, V> messageIds(MessageIdExtractor messageIds) {
            Require.unset(this.messageIds, "messageIds");
            this.messageIds = Require.notNull(messageIds, "messageIds");
            return this;
        }

        /** What a message id must look like; by default {@link KeyRules#DEFAULT}. */
        public Builder<K, V> keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
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

        /** How many times the handler runs for one record before it is dead-lettered; at least 1. */
        public Builder<K, V> maxAttempts(int maxAttempts) {
            Require.unset(this.maxAttempts, "maxAttempts");
            this.maxAttempts = Require.between(maxAttempts, 1, Integer.MAX_VALUE, "maxAttempts");
            return this;
        }

        /** The wait before the second attempt; doubled for each later one, up to {@link #maxBackoff}. */
        public Builder<K, V> backoff(Duration backoff) {
            Require.unset(this.backoff, "backoff");
            this.backoff = Require.positive(backoff, "backoff");
            return this;
        }

        public Builder<K, V> maxBackoff(Duration maxBackoff) {
            Require.unset(this.maxBackoff, "maxBackoff");
            this.maxBackoff = Require.positive(maxBackoff, "maxBackoff");
            return this;
        }

        /**
         * The bytes of a record's value that its fingerprint is computed over; needed for values other
         * than {@code byte[]}, {@code String}, {@code ByteBuffer} and {@code Bytes}, for example
         * {@code value -> serializer.serialize(topic, value)}. Must give the same bytes for the same
         * message every time.
         */
        public Builder<K, V> valueBytes(Function<? super V, byte[]> valueBytes) {
            Require.unset(this.valueBytes, "valueBytes");
            this.valueBytes = Require.notNull(valueBytes, "valueBytes");
            return this;
        }

        public Builder<K, V> listener(RecordProcessorListener listener) {
            Require.unset(this.listener, "listener");
            this.listener = Require.notNull(listener, "listener");
            return this;
        }

        public IdempotentRecordProcessor<K, V> build() {
            if (deadLetters == null) {
                throw new IllegalStateException("deadLetters must be set: a record that cannot be processed must go "
                        + "somewhere, or its partition stops behind it");
            }
            Duration b = backoff != null ? backoff : DEFAULT_BACKOFF;
            Duration max = maxBackoff != null ? maxBackoff : DEFAULT_MAX_BACKOFF;
            if (b.compareTo(max) > 0) {
                throw new IllegalStateException("backoff must not exceed maxBackoff, but was backoff=" + b
                        + ", maxBackoff=" + max);
            }
            String scopeWithoutTopic = SCOPE_PREFIX + consumerGroup + ":";
            if (scopeWithoutTopic.length() >= IdempotencyKey.MAX_SCOPE_LENGTH) {
                throw new IllegalStateException("consumerGroup leaves no room for a topic in the scope kafka:<group>:"
                        + "<topic> (at most " + IdempotencyKey.MAX_SCOPE_LENGTH + " characters), but had "
                        + consumerGroup.length() + " characters");
            }
            return new IdempotentRecordProcessor<>(this);
        }
    }
}
