package io.retrysafe.spring;

import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InProgressException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.DeadLetterSink;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxHandler;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.kafka.DeadLetterPublisher;
import io.retrysafe.kafka.KafkaInbox;
import io.retrysafe.kafka.MessageIds;
import java.util.List;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.support.KafkaUtils;

/**
 * The advice Spring Kafka's listener container puts around each call of a listener
 * ({@code ContainerProperties.setAdviceChain}): each record goes through the {@link Inbox}, with
 * the listener as its handler, in a transaction of the application's transaction manager (its
 * {@code JdbcTemplate}, JPA or {@code @Transactional} writes join), committed before the call
 * returns to the container, so before the container commits the offset. A record whose id is
 * already committed does not reach the listener. Batch listeners: {@link KafkaBatchInbox}.
 *
 * <p>The inbox decides; the advice only turns its result into what the container expects. With
 * {@code retrysafe.kafka.dead-letters=inbox} (the default) the inbox retries a failing listener within
 * the call and publishes the dead letter ({@link KafkaInbox#deadLetter}); the call returns. With
 * {@code dead-letters=error-handler} it runs each record once per call ({@code maxAttempts} 1) and
 * publishes nothing itself: retries and the dead-letter topic are the container's error handler's, so a
 * result the record cannot pass is thrown, its inbox headers noted for the recoverer
 * ({@link KafkaRecovererHeaders}). The table is that mode's; with {@code dead-letters=inbox} only what
 * the inbox answers "later" is thrown.
 *
 * <table class="striped">
 * <caption>What the container sees</caption>
 * <thead><tr><th scope="col">inbox result</th><th scope="col">the call</th></tr></thead>
 * <tbody>
 * <tr><td>processed: the listener ran, its writes and the id committed</td><td>returns</td></tr>
 * <tr><td>replayed: the id was committed before (a redelivery, a producer's duplicate)</td><td>returns; the
 *     listener did not run</td></tr>
 * <tr><td>the listener threw (handler failed)</td><td>everything rolled back, id included; its exception
 *     propagates (the error handler retries, then recovers, e.g. to the dead-letter topic)</td></tr>
 * <tr><td>no id, an invalid id</td><td>{@link InvalidKeyException}; the listener did not run</td></tr>
 * <tr><td>the id was committed with another payload</td><td>{@link FingerprintMismatchException}</td></tr>
 * <tr><td>a value without bytes to fingerprint</td><td>{@link UnreadablePayloadException}</td></tr>
 * <tr><td>another transaction holds the id past the store's lock timeout (a rebalance)</td>
 *     <td>{@link InProgressException}</td></tr>
 * <tr><td>the database failed (begin, claim, or commit)</td><td>{@link StoreUnavailableException}</td></tr>
 * </tbody>
 * </table>
 *
 * <p>The scope is {@code kafka:<consumer group>:<topic>}, that of the plain Kafka consumer: a Spring
 * listener and a plain consumer loop of one group share their inbox rows.
 */
final class KafkaInboxAdvice implements MethodInterceptor {
    private final Supplier<Inboxes> inboxSupplier;
    private final KafkaRecovererHeaders recovererHeaders = new KafkaRecovererHeaders();
    private volatile Inboxes inboxes;

    /** Resolved on the first record: the advice is created with the container factory, before the database beans. */
    KafkaInboxAdvice(Supplier<Inboxes> inboxes) {
        this.inboxSupplier = inboxes;
    }

    /**
     * What the advice works with: the inbox of records ({@code record}, a transaction per record) and
     * the inbox of a batch's runs ({@code joined}, joining the run's transaction), on one engine.
     */
    record Inboxes(Inbox record, Inbox joined, org.springframework.transaction.PlatformTransactionManager
            transactionManager, MessageIds messageIds, RetrySafeObservations observations,
            DeadLetterPublisher<Object, Object> deadLetters, String deadLetterSuffix) {

        /** True: the inbox publishes dead letters ({@code dead-letters=inbox}); a dead-lettered record is done. */
        boolean isDeadLetteringItself() {
            return deadLetters != null;
        }

        /** Publishes the record's dead letter to {@code <topic><suffix>}, as every Kafka consumer of RetrySafe does. */
        void publish(ConsumerRecord<?, ?> record, InboxResult.DeadLetter deadLetter) throws Exception {
            deadLetters.publish(KafkaInbox.deadLetter(record, record.topic() + deadLetterSuffix, deadLetter));
        }
    }

    /** The observations' {@code retrysafe.kind} of consumed records. */
    static final String KIND = "kafka";

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Object[] args = invocation.getArguments();
        // The proxy covers every method of the listener; only the delivery of data is ours.
        if (!"onMessage".equals(invocation.getMethod().getName()) || args.length == 0) {
            return invocation.proceed();
        }
        if (args[0] instanceof ConsumerRecord<?, ?> record) {
            process(record, invocation);
            return null;
        }
        if (!(args[0] instanceof List<?> || args[0] instanceof ConsumerRecords<?, ?>)) {
            throw new IllegalStateException("retrysafe.kafka.enabled covers record and batch listeners, but a listener "
                    + "received " + (args[0] == null ? "null" : args[0].getClass().getName()));
        }
        List<ConsumerRecord<?, ?>> records = KafkaBatchInbox.records(args[0]);
        if (!records.isEmpty()) {
            new KafkaBatchInbox(this, inboxes(), invocation, group(records.get(0))).process(records);
        }
        return null;
    }

    private void process(ConsumerRecord<?, ?> record, MethodInvocation invocation) throws Throwable {
        Inboxes in = inboxes();
        Listener listener = new Listener(invocation::proceed, true);
        InboxResult result = process(in, in.record(), group(record), record, listener);
        if (isPassed(in, result)) {
            return;
        }
        throw listener.failure != null ? listener.failure : refusal(in, record, result);
    }

    /** One record through {@code inbox}, observed; the result as the inbox gives it. */
    InboxResult process(Inboxes in, Inbox inbox, String group, ConsumerRecord<?, ?> record, InboxHandler handler)
            throws Throwable {
        try (RetrySafeObservations.Observed observed = in.observations().start(KIND, KIND + " " + record.topic(), false)) {
            String scope = KafkaInbox.scope(group, record.topic());
            String messageId = messageId(in, record);
            if (messageId != null) {
                try {
                    observed.key(inbox.keyRules().key(scope, messageId)); // its digest, for tracing
                } catch (InvalidKeyException e) {
                    // The inbox refuses it, and says why.
                }
            }
            DeadLetterSink deadLetters = deadLetter -> {
                if (inbox == in.joined() && deadLetter.reason() == DeadLetterReason.HANDLER_FAILED) {
                    return; // a listener failing in a batch's run is not this record's fault: the run is taken again
                }
                if (in.isDeadLetteringItself()) {
                    in.publish(record, deadLetter);
                } else {
                    // The advice throws, and the container's error handler recovers, with these headers.
                    recovererHeaders.noteDeadLetter(record, deadLetter);
                }
            };
            InboxResult result = KafkaInbox.process(inbox, scope, in.messageIds(), record, handler, deadLetters);
            if (!in.isDeadLetteringItself()
                    && (result instanceof InboxResult.Processed || result instanceof InboxResult.Replayed)) {
                recovererHeaders.notePassed(record);
            }
            observed.outcome(outcome(result));
            return result;
        }
    }

    /** True if the record is done with: processed, replayed, or dead-lettered by the inbox itself. */
    static boolean isPassed(Inboxes in, InboxResult result) {
        return result instanceof InboxResult.Processed || result instanceof InboxResult.Replayed
                || result instanceof InboxResult.DeadLetter && in.isDeadLetteringItself();
    }

    /** The record's message id as the inbox sees it (unchecked), or null; for telling copies in a batch apart. */
    String messageId(Inboxes in, ConsumerRecord<?, ?> record) {
        try {
            return in.messageIds().idOf(record);
        } catch (InvalidKeyException e) {
            return null;
        }
    }

    private static String outcome(InboxResult result) {
        if (result instanceof InboxResult.Processed) {
            return RetrySafeObservations.EXECUTED;
        } else if (result instanceof InboxResult.Replayed) {
            return RetrySafeObservations.REPLAYED;
        } else if (result instanceof InboxResult.RetryLater later) {
            return later.reason() == RetryReason.IN_PROGRESS ? RetrySafeObservations.IN_PROGRESS
                    : RetrySafeObservations.STORE_UNAVAILABLE;
        }
        DeadLetterReason reason = ((InboxResult.DeadLetter) result).reason();
        return switch (reason) {
            case MISSING_MESSAGE_ID, INVALID_MESSAGE_ID -> RetrySafeObservations.INVALID_KEY;
            case FINGERPRINT_MISMATCH -> RetrySafeObservations.MISMATCH;
            default -> RetrySafeObservations.ERROR;
        };
    }

    /**
     * The exception the container gets for a result the record cannot pass with, other than the
     * listener's own failure: not retryable for what is wrong with the message, retryable for the moment.
     */
    static RuntimeException refusal(Inboxes in, ConsumerRecord<?, ?> record, InboxResult result) {
        String prefix = "[" + in.record().engine().name() + "] " + KafkaInbox.position(record) + ": ";
        if (result instanceof InboxResult.RetryLater later) {
            if (later.reason() == RetryReason.IN_PROGRESS) {
                return new InProgressException(prefix + later.detail(), later.delay());
            }
            return new StoreUnavailableException(in.record().engine().store().name(), later.delay(),
                    prefix + later.detail(), null);
        }
        InboxResult.DeadLetter deadLetter = (InboxResult.DeadLetter) result;
        return switch (deadLetter.reason()) {
            case MISSING_MESSAGE_ID, INVALID_MESSAGE_ID -> new InvalidKeyException(
                    deadLetter.reason() == DeadLetterReason.MISSING_MESSAGE_ID ? InvalidKeyException.Rule.MISSING
                            : InvalidKeyException.Rule.MALFORMED, prefix + "no valid message id (" + in.messageIds()
                            + "): " + deadLetter.error());
            case FINGERPRINT_MISMATCH -> new FingerprintMismatchException(prefix + "the message id was processed "
                    + "before with a different payload");
            case UNREADABLE_PAYLOAD -> new UnreadablePayloadException(prefix + deadLetter.error());
            default -> new IllegalStateException(prefix + "dead-lettered by the inbox (" + deadLetter.reason()
                    .headerValue() + "): " + deadLetter.error());
        };
    }

    /** The inbox's dead-letter headers for Spring Kafka's recoverer, with {@code dead-letters=error-handler}. */
    KafkaRecovererHeaders recovererHeaders() {
        return recovererHeaders;
    }

    /** Resolves what the advice works with now (at start-up), so that a misconfiguration fails there. */
    void resolve() {
        inboxes();
    }

    private Inboxes inboxes() {
        Inboxes in = inboxes;
        if (in == null) {
            synchronized (this) {
                if (inboxes == null) {
                    inboxes = inboxSupplier.get();
                }
                in = inboxes;
            }
        }
        return in;
    }

    /** The consumer group of the container's thread, which the inbox scope needs. */
    static String group(ConsumerRecord<?, ?> record) {
        String group = KafkaUtils.getConsumerGroupId();
        if (group == null || group.isBlank()) {
            throw new IllegalStateException("retrysafe.kafka.enabled needs a consumer group (spring.kafka.consumer."
                    + "group-id or @KafkaListener(groupId)): the inbox scope is kafka:<group>:<topic>, but "
                    + KafkaInbox.position(record) + " was received without one");
        }
        return group;
    }

    /** The inbox's handler around a call of the listener; keeps the listener's own exception to rethrow it. */
    static final class Listener implements InboxHandler {
        private final Call call;
        private final boolean oneRecord;
        Throwable failure;

        /** @param oneRecord the call is for one record: {@link KafkaInboxAttempt} tells the listener its attempt */
        Listener(Call call, boolean oneRecord) {
            this.call = call;
            this.oneRecord = oneRecord;
        }

        @Override
        public void handle(java.sql.Connection connection, io.retrysafe.Attempt attempt) throws Exception {
            if (oneRecord) {
                KafkaInboxAttempt.set(attempt);
            }
            try {
                call.run();
                failure = null;
            } catch (Exception e) {
                failure = e; // as the container would have had it, for its error handler
                // The inbox's dead-letter header names the listener's own exception, not Spring's wrapper.
                throw e instanceof ListenerExecutionFailedException && e.getCause() instanceof Exception cause
                        ? cause : e;
            } catch (Error e) {
                throw e;
            } catch (Throwable t) {
                failure = t;
                throw new IllegalStateException(t);
            } finally {
                if (oneRecord) {
                    KafkaInboxAttempt.set(null);
                }
            }
        }
    }

    /** A call of the listener, as a method invocation proceeds. */
    @FunctionalInterface
    interface Call {
        void run() throws Throwable;
    }
}
