package io.retrysafe.nats;

import io.nats.client.JetStream;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsJetStreamMetaData;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterSink;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.internal.Require;
import java.lang.System.Logger.Level;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Processes JetStream messages with effect once, through an {@link Inbox}: the message id is marked
 * processed in the same database transaction as the handler's writes, and the message is
 * acknowledged only after that transaction committed.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("billing").build()))
 *         .retryStyle(RetryStyle.BROKER_REDELIVERY)                      // attempt n is delivery n
 *         .maxAttempts(5).backoff(Backoff.exponential(Duration.ofSeconds(1), Duration.ofMinutes(1)))
 *         .build();
 * NatsInbox processor = NatsInbox.builder(inbox,
 *                 (msg, jdbc, attempt) -> insertOrder(jdbc, msg.getData()))          // same connection
 *         .deadLetters(nats.jetStream(), "orders.dlq")
 *         .build();
 * RetrySafeNatsConsumer consumer = RetrySafeNatsConsumer.pull(nats, processor)
 *         .stream("ORDERS").durable("billing").start();
 * }</pre>
 *
 * <p>This class only translates. A message becomes a {@link Delivery}: scope
 * {@code nats:<stream>:<consumer>}, the id {@link MessageIds} reads ({@code Nats-Msg-Id} by
 * default), the payload, the position {@code <stream>#<sequence>} and JetStream's delivery count.
 * The inbox's answer becomes what JetStream is told:
 *
 * <table>
 * <caption>What each result does to the message</caption>
 * <tr><th>{@link InboxResult}</th><th>JetStream</th></tr>
 * <tr><td>{@code Processed}, {@code Replayed}</td><td>{@code ack()}</td></tr>
 * <tr><td>{@code RetryLater}</td><td>{@code nakWithDelay(delay)}</td></tr>
 * <tr><td>{@code DeadLetter}</td><td>{@code term()}, after the dead letter was stored</td></tr>
 * </table>
 *
 * <p>A crash between the commit and the acknowledgement: JetStream delivers the message again after
 * {@code ack_wait}, and that delivery is replayed. Immutable and thread-safe.
 */
public final class NatsInbox {
    private static final System.Logger LOG = System.getLogger(NatsInbox.class.getName());

    private final Inbox inbox;
    private final String name;
    private final MessageHandler handler;
    private final MessageIds messageIds;
    private final JetStream deadLetterJetStream;
    private final String deadLetterSubject;
    private final Consumer<Message> afterCommit;

    private NatsInbox(Builder b) {
        this.inbox = b.inbox;
        this.name = inbox.engine().name();
        this.handler = b.handler;
        this.messageIds = b.messageIds == null ? MessageIds.natsMsgId() : b.messageIds;
        this.deadLetterJetStream = b.deadLetterJetStream;
        this.deadLetterSubject = b.deadLetterSubject;
        this.afterCommit = b.afterCommit;
    }

    /**
     * @param inbox   an inbox retrying by {@link RetryStyle#BROKER_REDELIVERY}: a failed handler is nakked
     *                with the back-off's delay, and attempt {@code n} is JetStream's delivery {@code n}
     * @param handler the business work, on the transaction's connection
     * @throws IllegalArgumentException if the inbox retries in process
     */
    public static Builder builder(Inbox inbox, MessageHandler handler) {
        return new Builder(inbox, handler);
    }

    /** The scope of the keys of messages delivered by {@code consumer} of {@code stream}. */
    public static String scope(String stream, String consumer) {
        return Inbox.scope("nats", stream, consumer);
    }

    /** Where a JetStream message is, in logs and dead letters: {@code <stream>#<sequence>}. */
    static String position(Message msg) {
        return msg.metaData().getStream() + "#" + msg.metaData().streamSequence();
    }

    /**
     * Processes one delivery and acknowledges, nakks or terminates it; never throws for what the
     * handler or the database do. Returns the inbox's result.
     *
     * @throws IllegalArgumentException if {@code msg} is not a JetStream message (it has no ack subject)
     */
    public InboxResult process(Message msg) {
        Require.notNull(msg, "msg");
        if (!msg.isJetStream()) {
            throw new IllegalArgumentException("a JetStream message from a consumer is needed, but the message on "
                    + msg.getSubject() + " has no JetStream ack subject");
        }
        NatsJetStreamMetaData meta = msg.metaData();
        String position = position(msg);
        String id = null;
        InvalidKeyException unreadable = null;
        try {
            id = messageIds.idOf(msg);
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, () -> "[" + name + "] message " + position + ": reading its id with " + messageIds
                    + " failed", e);
            unreadable = e instanceof InvalidKeyException k ? k
                    : new InvalidKeyException(InvalidKeyException.Rule.MALFORMED, "reading the message id failed: " + e);
        }
        Delivery delivery = new Delivery(scope(meta.getStream(), meta.getConsumer()), id, msg.getData(), position,
                (int) Math.min(meta.deliveredCount(), Integer.MAX_VALUE));
        DeadLetterSink deadLetters = deadLetter -> deadLetter(msg, meta, deadLetter);
        InboxResult result = unreadable != null ? inbox.refuse(delivery, unreadable, deadLetters)
                : inbox.process(delivery, (connection, attempt) -> handler.handle(msg, connection, attempt), deadLetters);
        if (result instanceof InboxResult.Processed && afterCommit != null) {
            afterCommit.accept(msg);
        }
        tell(msg, delivery, result);
        return result;
    }

    /** Acks, nakks or terminates; a failure to tell JetStream only means it delivers the message again after {@code ack_wait}. */
    private void tell(Message msg, Delivery delivery, InboxResult result) {
        try {
            if (result instanceof InboxResult.RetryLater retry) {
                msg.nakWithDelay(retry.delay());
            } else if (result instanceof InboxResult.DeadLetter) {
                msg.term();
            } else {
                msg.ack();
            }
        } catch (RuntimeException e) {
            // What was decided is durable (the commit, the dead letter) or nothing was kept: the redelivery decides again.
            LOG.log(Level.WARNING, () -> "[" + name + "] " + delivery + " could not be "
                    + (result instanceof InboxResult.RetryLater ? "nakked" : result instanceof InboxResult.DeadLetter
                            ? "terminated" : "acknowledged") + "; JetStream delivers it again after ack_wait: " + e);
        }
    }

    /**
     * Publishes the payload with {@link #deadLetterHeaders} and waits for the stream's acknowledgement; a
     * {@code Nats-Msg-Id} per stream message lets the dead-letter stream drop a second copy.
     */
    private void deadLetter(Message msg, NatsJetStreamMetaData meta, InboxResult.DeadLetter deadLetter)
            throws Exception {
        deadLetterJetStream.publish(deadLetterSubject, deadLetterHeaders(msg, deadLetter.headers()),
                msg.getData() == null ? new byte[0] : msg.getData(),
                PublishOptions.builder().messageId("retrysafe-dlq:" + meta.getStream() + ":" + meta.getConsumer()
                        + ":" + meta.streamSequence()).build());
    }

    /**
     * The original headers but the {@code Nats-*} ones (instructions to the server) and the inbox's names,
     * then the inbox's, each value cut to printable ASCII (NATS refuses a value with a character above 0x7f).
     */
    static Headers deadLetterHeaders(Message msg, Map<String, String> inboxHeaders) {
        Headers headers = new Headers();
        if (msg.hasHeaders()) {
            msg.getHeaders().forEach((header, values) -> {
                if (!header.regionMatches(true, 0, "Nats-", 0, 5)
                        && DeadLetterHeaders.NAMES.stream().noneMatch(header::equalsIgnoreCase)) {
                    headers.add(header, values);
                }
            });
        }
        inboxHeaders.forEach((header, value) -> headers.put(header, ascii(value)));
        return headers;
    }

    private static String ascii(String value) {
        StringBuilder out = new StringBuilder(value.length());
        value.chars().forEach(c -> out.append(c >= 0x20 && c < 0x7f ? (char) c : c == '\t' ? ' ' : '?'));
        return out.toString();
    }

    public Inbox inbox() {
        return inbox;
    }

    public MessageIds messageIds() {
        return messageIds;
    }

    public String deadLetterSubject() {
        return deadLetterSubject;
    }

    @Override
    public String toString() {
        return "NatsInbox[" + inbox + ", messageIds=" + messageIds + ", deadLetterSubject=" + deadLetterSubject + "]";
    }

    /** Builds a {@link NatsInbox}; each value may be set once. */
    public static final class Builder {
        private final Inbox inbox;
        private final MessageHandler handler;
        private MessageIds messageIds;
        private JetStream deadLetterJetStream;
        private String deadLetterSubject;
        private Consumer<Message> afterCommit;

        private Builder(Inbox inbox, MessageHandler handler) {
            this.inbox = Require.notNull(inbox, "inbox");
            this.handler = Require.notNull(handler, "handler");
            if (inbox.retryStyle() != RetryStyle.BROKER_REDELIVERY) {
                throw new IllegalArgumentException("a JetStream consumer retries by redelivery (nakWithDelay), so the"
                        + " inbox's retry style must be BROKER_REDELIVERY, but was " + inbox.retryStyle());
            }
        }

        /** Where the id comes from; default {@link MessageIds#natsMsgId()}. */
        public Builder messageIds(MessageIds messageIds) {
            Require.unset(this.messageIds, "messageIds");
            this.messageIds = Require.notNull(messageIds, "messageIds");
            return this;
        }

        /**
         * Publishes every message given up to {@code subject} through {@code jetStream} before it is
         * terminated, with the inbox's {@link DeadLetterHeaders}; a stream must capture the subject
         * (the publish waits for its acknowledgement). Required.
         */
        public Builder deadLetters(JetStream jetStream, String subject) {
            Require.unset(this.deadLetterSubject, "deadLetters");
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

        /** For crash tests: runs after the commit and before the acknowledgement. */
        Builder afterCommit(Consumer<Message> afterCommit) {
            Require.unset(this.afterCommit, "afterCommit");
            this.afterCommit = Require.notNull(afterCommit, "afterCommit");
            return this;
        }

        /** @throws IllegalStateException if the dead letters are not set */
        public NatsInbox build() {
            Require.set(deadLetterSubject, "deadLetters", "a message given up must go somewhere, or it is only "
                    + "terminated and left in the stream where no consumer sees it again");
            return new NatsInbox(this);
        }
    }
}
