package io.retrysafe.nats;

import io.nats.client.JetStream;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import io.retrysafe.Fingerprint;
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
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * Processes JetStream messages with effect once: the message id is marked processed in the same
 * database transaction as the handler's writes, and the message is acknowledged only after that
 * transaction committed.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();   // the inbox
 * IdempotentMessageProcessor processor = IdempotentMessageProcessor.builder(
 *                 RetrySafe.builder(store).build(),
 *                 (msg, jdbc, attempt) -> insertOrder(jdbc, msg.getData()))          // same connection
 *         .deadLetter(nats.jetStream(), "orders.dlq")
 *         .build();
 * RetrySafeJetStreamConsumer consumer = RetrySafeJetStreamConsumer.pull(nats, processor)
 *         .stream("ORDERS").durable("billing").start();
 * }</pre>
 *
 * <p>The inbox is the store's records table: scope {@code nats:<stream>:<consumer>}, key the message
 * id ({@link MessageIds}), fingerprint the SHA-256 of the payload. For each delivery, on a
 * connection from the store's data source:
 *
 * <table>
 * <caption>What each outcome of the claim does to the message</caption>
 * <tr><th>outcome</th><th>JetStream</th><th>{@link Disposition}</th></tr>
 * <tr><td>claimed: the handler ran and the transaction committed</td><td>{@code ack()}</td><td>{@code Processed}</td></tr>
 * <tr><td>already processed (a redelivery, a producer's duplicate)</td><td>{@code ack()}</td><td>{@code Replayed}</td></tr>
 * <tr><td>another delivery of the id holds it (past the store's lock timeout)</td><td>{@code nakWithDelay(inProgressDelay)}</td><td>{@code Redelivered(IN_PROGRESS)}</td></tr>
 * <tr><td>the database failed</td><td>{@code nakWithDelay(retryAfter)}</td><td>{@code Redelivered(STORE_UNAVAILABLE)}</td></tr>
 * <tr><td>the handler threw, delivery &lt; {@code maxDeliver}</td><td>{@code nakWithDelay(backoff)}</td><td>{@code Redelivered(HANDLER_FAILED)}</td></tr>
 * <tr><td>the handler threw on delivery {@code maxDeliver} or later, or a permanent failure</td><td>dead letter, {@code term()}</td><td>{@code Terminated(RETRIES_EXHAUSTED | PERMANENT_FAILURE)}</td></tr>
 * <tr><td>the id was processed with another payload (producer bug)</td><td>dead letter, {@code term()}</td><td>{@code Terminated(FINGERPRINT_MISMATCH)}</td></tr>
 * <tr><td>no id, or an invalid one</td><td>dead letter, {@code term()}</td><td>{@code Terminated(MISSING_MESSAGE_ID | INVALID_MESSAGE_ID)}</td></tr>
 * </table>
 *
 * <p>A crash after the commit and before the acknowledgement leaves the message unacknowledged:
 * JetStream delivers it again after the consumer's {@code ack_wait}, and that delivery is replayed.
 * A message is never terminated before its dead letter was stored (when a dead-letter subject is
 * configured): if publishing the dead letter fails, the message is nakked and tried again.
 *
 * <p>Immutable and thread-safe; one processor serves any number of consumers and threads.
 */
public final class IdempotentMessageProcessor {
    public static final int DEFAULT_MAX_DELIVER = 5;
    public static final Duration DEFAULT_RETRY_BACKOFF = Duration.ofSeconds(1);
    public static final Duration DEFAULT_MAX_RETRY_BACKOFF = Duration.ofMinutes(1);
    public static final Duration DEFAULT_IN_PROGRESS_DELAY = Duration.ofMillis(500);
    /** The scope of every message's key starts with this, followed by {@code <stream>:<consumer>}. */
    public static final String SCOPE_PREFIX = "nats:";

    private static final System.Logger LOG = System.getLogger(IdempotentMessageProcessor.class.getName());
    /** What is stored for replay: the stream sequence of the delivery that processed the id. */
    private static final ResponseCodec<String> PROCESSED_SEQUENCE = ResponseCodec.utf8();
    private static final Predicate<Exception> NOTHING_IS_PERMANENT = e -> false;
    private static final byte[] EMPTY = new byte[0];

    private final String name;
    private final TransactionalRetrySafe tx;
    private final RetrySafe engine;
    private final DataSource dataSource;
    private final MessageHandler handler;
    private final MessageIds messageIds;
    private final KeyRules keyRules;
    private final int maxDeliver;
    private final Duration retryBackoff;
    private final Duration maxRetryBackoff;
    private final Duration inProgressDelay;
    private final Predicate<? super Exception> permanentFailure;
    private final JetStream deadLetterJetStream;
    private final String deadLetterSubject;
    private final ProcessorListener listener;
    private final Consumer<Message> afterCommit;

    private IdempotentMessageProcessor(Builder b) {
        // Every result is stored: the handler's writes are committed with it, so a redelivery must replay.
        this.engine = b.engine.with(OperationPolicy.from(b.engine.policy()).outcomePolicy(OutcomePolicy.STORE_ALL)
                .build());
        this.tx = TransactionalRetrySafe.of(engine);
        this.name = engine.name();
        this.dataSource = b.dataSource == null ? ((JdbcIdempotencyStore) engine.store()).dataSource() : b.dataSource;
        this.keyRules = b.keyRules == null ? KeyRules.DEFAULT : b.keyRules;
        this.handler = b.handler;
        this.messageIds = b.messageIds == null ? MessageIds.natsMsgId() : b.messageIds;
        this.maxDeliver = b.maxDeliver == null ? DEFAULT_MAX_DELIVER : b.maxDeliver;
        this.retryBackoff = b.retryBackoff == null ? DEFAULT_RETRY_BACKOFF : b.retryBackoff;
        this.maxRetryBackoff = b.maxRetryBackoff == null ? DEFAULT_MAX_RETRY_BACKOFF : b.maxRetryBackoff;
        this.inProgressDelay = b.inProgressDelay == null ? DEFAULT_IN_PROGRESS_DELAY : b.inProgressDelay;
        this.permanentFailure = b.permanentFailure == null ? NOTHING_IS_PERMANENT : b.permanentFailure;
        this.deadLetterJetStream = b.deadLetterJetStream;
        this.deadLetterSubject = b.deadLetterSubject;
        this.listener = b.listener == null ? ProcessorListener.NONE : b.listener;
        this.afterCommit = b.afterCommit;
    }

    /**
     * @param engine  an engine on a {@link JdbcIdempotencyStore} in the database the handler writes to;
     *                its policy's retention is how long a processed id is remembered
     * @param handler the business work, on the transaction's connection
     */
    public static Builder builder(RetrySafe engine, MessageHandler handler) {
        return new Builder(engine, handler);
    }

    /** The same, for an application that already has the engine in transactional mode. */
    public static Builder builder(TransactionalRetrySafe inbox, MessageHandler handler) {
        return new Builder(Require.notNull(inbox, "inbox").engine(), handler);
    }

    /** The scope of the keys of messages delivered by {@code consumer} of {@code stream}. */
    public static String scope(String stream, String consumer) {
        return SCOPE_PREFIX + Require.notNull(stream, "stream") + ":" + Require.notNull(consumer, "consumer");
    }

    /**
     * Processes one delivery and acknowledges, nakks or terminates it; never throws for what the
     * handler or the database do. Returns what it did.
     *
     * @throws IllegalArgumentException if {@code msg} is not a JetStream message (it has no ack subject)
     */
    public Disposition process(Message msg) {
        Require.notNull(msg, "msg");
        if (!msg.isJetStream()) {
            throw new IllegalArgumentException("a JetStream message from a consumer is needed, but the message on "
                    + msg.getSubject() + " has no JetStream ack subject");
        }
        Delivery delivery = new Delivery(msg);
        Disposition disposition = decide(delivery);
        try {
            listener.onDisposition(msg, disposition);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] listener " + listener.getClass().getName()
                    + ".onDisposition threw; ignored", e);
        }
        return disposition;
    }

    private Disposition decide(Delivery d) {
        String id;
        IdempotencyKey key;
        try {
            id = messageIds.idOf(d.msg);
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, () -> "[" + name + "] " + d + ": reading its id with " + messageIds + " failed", e);
            return terminate(d, null, Disposition.Reason.INVALID_MESSAGE_ID, e.toString());
        }
        try {
            key = keyRules.key(d.scope, id);
        } catch (InvalidKeyException e) {
            engine.listener().onInvalidKey(e);
            LOG.log(Level.ERROR, () -> "[" + name + "] " + d + " has no valid id (" + messageIds + "): "
                    + e.getMessage() + "; it cannot be processed safely");
            return terminate(d, id, e.rule() == InvalidKeyException.Rule.MISSING
                    ? Disposition.Reason.MISSING_MESSAGE_ID : Disposition.Reason.INVALID_MESSAGE_ID, e.getMessage());
        } catch (IllegalArgumentException e) { // the scope: stream and consumer names too long together
            LOG.log(Level.ERROR, () -> "[" + name + "] " + d + ": " + e.getMessage());
            return terminate(d, id, Disposition.Reason.INVALID_MESSAGE_ID, e.getMessage());
        }
        byte[] data = d.msg.getData();
        Fingerprint fingerprint = Fingerprint.sha256(data == null ? EMPTY : data);

        Connection connection;
        try {
            connection = dataSource.getConnection();
        } catch (SQLException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + ": no database connection: " + e);
            return redeliver(d, Disposition.Reason.STORE_UNAVAILABLE, engine.policy().retryAfter());
        }
        Outcome<String> outcome;
        try {
            outcome = tx.execute(connection, key, fingerprint, PROCESSED_SEQUENCE, attempt -> {
                try {
                    handler.handle(d.msg, connection, attempt);
                } catch (Exception e) {
                    throw new HandlerFailure(e);
                }
                return Long.toString(d.meta.streamSequence());
            });
        } catch (HandlerFailure f) {
            return handlerFailed(d, key, f.getCause());
        } catch (StoreUnavailableException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " (key " + key.digest()
                    + "): the transaction did not commit: " + e.getMessage());
            return redeliver(d, Disposition.Reason.STORE_UNAVAILABLE, e.retryAfter());
        } catch (RuntimeException e) {
            return handlerFailed(d, key, e);
        } finally {
            close(connection);
        }

        if (outcome instanceof Outcome.Executed<String> executed) {
            if (executed.completion() == Outcome.Completion.LEASE_LOST) {
                LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " (key " + key.digest()
                        + ") committed, but its record was not written; acknowledging anyway");
            }
            if (afterCommit != null) {
                afterCommit.accept(d.msg);
            }
            ack(d);
            return new Disposition.Processed(executed.attempt().number());
        } else if (outcome instanceof Outcome.Replayed<String> replayed) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] " + d + " (key " + key.digest()
                    + ") was processed before, by stream sequence " + replayed.value() + "; acknowledging");
            ack(d);
            return new Disposition.Replayed();
        } else if (outcome instanceof Outcome.InProgress<String>) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] " + d + " (key " + key.digest()
                    + ") is held by another delivery; delivering again in " + inProgressDelay);
            return redeliver(d, Disposition.Reason.IN_PROGRESS, inProgressDelay);
        } else if (outcome instanceof Outcome.FingerprintMismatch<String>) {
            LOG.log(Level.ERROR, () -> "[" + name + "] producer bug: " + d + " reuses the id of a processed message"
                    + " with another payload (key " + key.digest() + "); not processed");
            return terminate(d, id, Disposition.Reason.FINGERPRINT_MISMATCH,
                    "message id already processed with another payload");
        } else if (outcome instanceof Outcome.StoreUnavailable<String> unavailable) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " (key " + key.digest() + "): "
                    + unavailable.failure().getMessage());
            return redeliver(d, Disposition.Reason.STORE_UNAVAILABLE, unavailable.retryAfter());
        }
        // Unprotected cannot happen: transactional mode refuses to fail open.
        throw new IllegalStateException("unexpected outcome " + outcome);
    }

    private Disposition handlerFailed(Delivery d, IdempotencyKey key, Throwable failure) {
        boolean permanent = failure instanceof Exception e && permanentFailure.test(e);
        long delivered = d.meta.deliveredCount();
        if (permanent || delivered >= maxDeliver) {
            Disposition.Reason reason = permanent ? Disposition.Reason.PERMANENT_FAILURE
                    : Disposition.Reason.RETRIES_EXHAUSTED;
            LOG.log(Level.ERROR, () -> "[" + name + "] " + d + " (key " + key.digest() + ") failed "
                    + (permanent ? "permanently" : "on its last delivery (maxDeliver " + maxDeliver + ")")
                    + "; giving it up", failure);
            return terminate(d, key.value(), reason, failure.toString());
        }
        Duration delay = retryDelay(delivered);
        LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " (key " + key.digest() + ") failed; delivering again in "
                + delay + " (" + delivered + " of " + maxDeliver + " deliveries)", failure);
        return redeliver(d, Disposition.Reason.HANDLER_FAILED, delay);
    }

    /**
     * The delay before delivery {@code delivered + 1} after a handler failure:
     * {@code retryBackoff × 2^(delivered − 1)}, at most {@code maxRetryBackoff}.
     */
    public Duration retryDelay(long delivered) {
        long doublings = Math.min(Math.max(delivered, 1) - 1, 62);
        Duration delay;
        try {
            delay = retryBackoff.multipliedBy(1L << doublings);
        } catch (ArithmeticException e) {
            return maxRetryBackoff;
        }
        return delay.compareTo(maxRetryBackoff) > 0 ? maxRetryBackoff : delay;
    }

    private void ack(Delivery d) {
        try {
            d.msg.ack();
        } catch (RuntimeException e) {
            // Committed already: the redelivery after ack_wait is replayed, so nothing runs twice.
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " was committed but could not be acknowledged;"
                    + " its redelivery will be replayed: " + e);
        }
    }

    private Disposition redeliver(Delivery d, Disposition.Reason reason, Duration delay) {
        try {
            d.msg.nakWithDelay(delay);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " could not be nakked; JetStream delivers it again"
                    + " after ack_wait: " + e);
        }
        return new Disposition.Redelivered(reason, delay);
    }

    private Disposition terminate(Delivery d, String id, Disposition.Reason reason, String error) {
        boolean deadLettered = false;
        if (deadLetterSubject != null) {
            try {
                deadLetterJetStream.publish(deadLetterSubject, deadLetterHeaders(d, id, reason, error),
                        d.msg.getData() == null ? EMPTY : d.msg.getData(),
                        PublishOptions.builder().messageId(deadLetterId(d)).build());
                deadLettered = true;
            } catch (Exception e) { // IOException, JetStreamApiException, a closed connection
                Duration delay = retryDelay(d.meta.deliveredCount());
                LOG.log(Level.ERROR, () -> "[" + name + "] " + d + " (" + reason.header() + ") could not be published"
                        + " to dead-letter subject " + deadLetterSubject + "; not terminating it, delivering it again"
                        + " in " + delay + ": " + e);
                return redeliver(d, Disposition.Reason.DEAD_LETTER_FAILED, delay);
            }
        }
        try {
            d.msg.term();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " could not be terminated; JetStream delivers it again"
                    + " after ack_wait: " + e);
        }
        if (deadLettered) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + d + " terminated (" + reason.header()
                    + ") and published to " + deadLetterSubject);
        } else {
            LOG.log(Level.ERROR, () -> "[" + name + "] " + d + " terminated (" + reason.header() + ": " + error
                    + "); no dead-letter subject is configured: it is left in the stream at that sequence, and"
                    + " JetStream publishes the advisory $JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."
                    + d.meta.getStream() + "." + d.meta.getConsumer());
        }
        return new Disposition.Terminated(reason, deadLettered);
    }

    private static Headers deadLetterHeaders(Delivery d, String id, Disposition.Reason reason, String error) {
        Headers headers = new Headers();
        if (d.msg.hasHeaders()) {
            d.msg.getHeaders().forEach((header, values) -> {
                if (!header.regionMatches(true, 0, "Nats-", 0, 5)) {
                    headers.add(header, values);
                }
            });
        }
        headers.put(DeadLetterHeaders.REASON, reason.header());
        if (error != null) {
            headers.put(DeadLetterHeaders.ERROR, headerValue(error, DeadLetterHeaders.MAX_ERROR_LENGTH));
        }
        headers.put(DeadLetterHeaders.STREAM, d.meta.getStream());
        headers.put(DeadLetterHeaders.CONSUMER, d.meta.getConsumer());
        headers.put(DeadLetterHeaders.STREAM_SEQUENCE, Long.toString(d.meta.streamSequence()));
        headers.put(DeadLetterHeaders.DELIVERED, Long.toString(d.meta.deliveredCount()));
        headers.put(DeadLetterHeaders.SUBJECT, d.msg.getSubject());
        if (id != null && !id.isEmpty()) {
            headers.put(DeadLetterHeaders.MESSAGE_ID, headerValue(id, 1024));
        }
        return headers;
    }

    /** One dead letter per stream message, however often dead-lettering it is tried: the dead-letter stream drops repeats. */
    private static String deadLetterId(Delivery d) {
        return "retrysafe-dlq:" + d.meta.getStream() + ":" + d.meta.getConsumer() + ":" + d.meta.streamSequence();
    }

    /** Printable ASCII on one line (NATS header values cannot hold line breaks), cut to {@code max} characters. */
    static String headerValue(String value, int max) {
        StringBuilder out = new StringBuilder(Math.min(value.length(), max));
        for (int i = 0; i < value.length() && out.length() < max; i++) {
            char c = value.charAt(i);
            out.append(c >= 0x20 && c < 0x7f ? c : (c == '\n' || c == '\r' || c == '\t') ? ' ' : '?');
        }
        String s = out.toString().strip();
        return s.isEmpty() ? "-" : s;
    }

    private void close(Connection connection) {
        try {
            connection.close();
        } catch (SQLException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] closing a database connection failed: " + e);
        }
    }

    public RetrySafe engine() {
        return engine;
    }

    public MessageIds messageIds() {
        return messageIds;
    }

    /** The delivery on which a failing handler is given up; JetStream's {@code deliveredCount} counts every delivery. */
    public int maxDeliver() {
        return maxDeliver;
    }

    public Duration retryBackoff() {
        return retryBackoff;
    }

    public Duration maxRetryBackoff() {
        return maxRetryBackoff;
    }

    public Duration inProgressDelay() {
        return inProgressDelay;
    }

    public Optional<String> deadLetterSubject() {
        return Optional.ofNullable(deadLetterSubject);
    }

    @Override
    public String toString() {
        return "IdempotentMessageProcessor[engine=" + name + ", store=" + engine.store().name() + ", messageIds="
                + messageIds + ", maxDeliver=" + maxDeliver + ", retryBackoff=" + retryBackoff + ", maxRetryBackoff="
                + maxRetryBackoff + ", inProgressDelay=" + inProgressDelay + ", deadLetterSubject=" + deadLetterSubject
                + "]";
    }

    /** One delivery as logs name it: never its id or payload, only where it sits in its stream. */
    private static final class Delivery {
        final Message msg;
        final NatsJetStreamMetaData meta;
        final String scope;

        Delivery(Message msg) {
            this.msg = msg;
            this.meta = msg.metaData();
            this.scope = scope(meta.getStream(), meta.getConsumer());
        }

        @Override
        public String toString() {
            return "message " + meta.getStream() + "#" + meta.streamSequence() + " (consumer " + meta.getConsumer()
                    + ", delivery " + meta.deliveredCount() + ")";
        }
    }

    /** Carries the handler's exception through the engine, so that it is told apart from the store's. */
    private static final class HandlerFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HandlerFailure(Exception cause) {
            super(cause);
        }
    }

    /** Builds an {@link IdempotentMessageProcessor}; each value may be set once. */
    public static final class Builder {
        private final RetrySafe engine;
        private final MessageHandler handler;
        private MessageIds messageIds;
        private KeyRules keyRules;
        private DataSource dataSource;
        private Integer maxDeliver;
        private Duration retryBackoff;
        private Duration maxRetryBackoff;
        private Duration inProgressDelay;
        private Predicate<? super Exception> permanentFailure;
        private JetStream deadLetterJetStream;
        private String deadLetterSubject;
        private ProcessorListener listener;
        private Consumer<Message> afterCommit;

        private Builder(RetrySafe engine, MessageHandler handler) {
            this.engine = Require.notNull(engine, "engine");
            this.handler = Require.notNull(handler, "handler");
            if (!(engine.store() instanceof JdbcIdempotencyStore)) {
                throw new IllegalArgumentException("the processor marks messages processed in the handler's database"
                        + " transaction and needs an engine on a JdbcIdempotencyStore, but its store was "
                        + engine.store().name());
            }
            if (engine.failOpen()) {
                throw new IllegalArgumentException("the processor cannot fail open: the store is the handler's own"
                        + " database, so there is nothing to run without it");
            }
        }

        /** Where the id comes from; default {@link MessageIds#natsMsgId()}. */
        public Builder messageIds(MessageIds messageIds) {
            Require.unset(this.messageIds, "messageIds");
            this.messageIds = Require.notNull(messageIds, "messageIds");
            return this;
        }

        /** What a message id must look like; default {@link KeyRules#DEFAULT} (1 to 255 printable ASCII characters). */
        public Builder keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return this;
        }

        /**
         * Where the handler's connections come from; default the store's data source. It must reach
         * the store's database: the records table is written on the same connection.
         */
        public Builder dataSource(DataSource dataSource) {
            Require.unset(this.dataSource, "dataSource");
            this.dataSource = Require.notNull(dataSource, "dataSource");
            return this;
        }

        /**
         * The delivery on which a failing handler is given up (dead-lettered and terminated);
         * default {@value IdempotentMessageProcessor#DEFAULT_MAX_DELIVER}. It counts JetStream deliveries, not handler runs:
         * a delivery nakked because the id was in progress counts too. The consumer's own
         * {@code max_deliver} must be unlimited ({@code -1}) or at least this, or JetStream stops
         * delivering first and nothing is dead-lettered.
         */
        public Builder maxDeliver(int maxDeliver) {
            Require.unset(this.maxDeliver, "maxDeliver");
            this.maxDeliver = Require.between(maxDeliver, 1, Integer.MAX_VALUE, "maxDeliver");
            return this;
        }

        /**
         * The delay before the next delivery after a handler failure: {@code initial}, doubled per
         * delivery, at most {@code max}; default 1 s up to 1 min
         * ({@link IdempotentMessageProcessor#DEFAULT_RETRY_BACKOFF},
         * {@link IdempotentMessageProcessor#DEFAULT_MAX_RETRY_BACKOFF}).
         */
        public Builder retryBackoff(Duration initial, Duration max) {
            Require.unset(this.retryBackoff, "retryBackoff");
            Require.positive(initial, "retryBackoff initial");
            Require.positive(max, "retryBackoff max");
            if (max.compareTo(initial) < 0) {
                throw new IllegalArgumentException("retryBackoff max must not be less than initial, but was initial="
                        + initial + ", max=" + max);
            }
            this.retryBackoff = initial;
            this.maxRetryBackoff = max;
            return this;
        }

        /** The delay before a delivery found its id held by another delivery is tried again; default 500 ms. */
        public Builder inProgressDelay(Duration inProgressDelay) {
            Require.unset(this.inProgressDelay, "inProgressDelay");
            this.inProgressDelay = Require.positive(inProgressDelay, "inProgressDelay");
            return this;
        }

        /**
         * Handler exceptions that no redelivery can cure (a payload that does not parse): the message
         * is dead-lettered and terminated on the first failure. By default every exception is retried.
         */
        public Builder permanentFailure(Predicate<? super Exception> permanentFailure) {
            Require.unset(this.permanentFailure, "permanentFailure");
            this.permanentFailure = Require.notNull(permanentFailure, "permanentFailure");
            return this;
        }

        /**
         * Publishes every message given up to {@code subject} through {@code jetStream} before it is
         * terminated, with {@link DeadLetterHeaders reason headers}; a stream must capture the
         * subject (the publish waits for its acknowledgement). Without it, a message given up is only
         * terminated and logged.
         */
        public Builder deadLetter(JetStream jetStream, String subject) {
            Require.unset(this.deadLetterSubject, "deadLetter");
            Require.notNull(jetStream, "jetStream");
            Require.notNull(subject, "subject");
            if (subject.isEmpty() || subject.startsWith(".") || subject.endsWith(".") || subject.contains("..")
                    || !subject.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '*' && c != '>')) {
                throw new IllegalArgumentException("the dead-letter subject must be a subject without wildcards or"
                        + " white space, but was \"" + subject + "\"");
            }
            this.deadLetterJetStream = jetStream;
            this.deadLetterSubject = subject;
            return this;
        }

        public Builder listener(ProcessorListener listener) {
            Require.unset(this.listener, "listener");
            this.listener = Require.notNull(listener, "listener");
            return this;
        }

        /** For crash tests: runs after the commit and before the acknowledgement. */
        Builder afterCommit(Consumer<Message> afterCommit) {
            Require.unset(this.afterCommit, "afterCommit");
            this.afterCommit = Require.notNull(afterCommit, "afterCommit");
            return this;
        }

        public IdempotentMessageProcessor build() {
            return new IdempotentMessageProcessor(this);
        }
    }
}
