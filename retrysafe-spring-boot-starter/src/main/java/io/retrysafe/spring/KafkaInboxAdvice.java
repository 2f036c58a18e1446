package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InProgressException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationFailedException;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.IdempotentRecordProcessor;
import io.retrysafe.kafka.MessageIdExtractor;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.utils.Bytes;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.kafka.support.KafkaUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;

/**
 * The advice Spring Kafka's listener container puts around each call of a record listener
 * ({@code ContainerProperties.setAdviceChain}): the record's message id is claimed in a new
 * transaction of the application's transaction manager, the listener runs inside it (its
 * {@code JdbcTemplate}, JPA or {@code @Transactional} writes join), and the transaction commits
 * before the call returns to the container, so before the container commits the offset. A record
 * whose id is already committed does not reach the listener.
 *
 * <table class="striped">
 * <caption>What the container sees</caption>
 * <thead><tr><th scope="col">what happened</th><th scope="col">the call</th></tr></thead>
 * <tbody>
 * <tr><td>the listener ran, its writes and the id committed</td><td>returns</td></tr>
 * <tr><td>the id was committed before (a redelivery, a producer's duplicate)</td><td>returns; the listener did not run</td></tr>
 * <tr><td>the listener threw</td><td>everything rolled back, id included; its exception propagates (the
 *     error handler retries, then recovers, e.g. to the dead-letter topic)</td></tr>
 * <tr><td>no id, an invalid id</td><td>{@link InvalidKeyException}; the listener did not run</td></tr>
 * <tr><td>the id was committed with another payload</td><td>{@link FingerprintMismatchException}</td></tr>
 * <tr><td>another transaction holds the id past the store's lock timeout (a rebalance)</td>
 *     <td>{@link InProgressException}</td></tr>
 * <tr><td>the database failed (claim, or commit)</td><td>{@link StoreUnavailableException}</td></tr>
 * </tbody>
 * </table>
 *
 * <p>The scope is that of {@link IdempotentRecordProcessor}, {@code kafka:<consumer group>:<topic>}:
 * a Spring listener and a plain consumer loop of one group share their inbox rows.
 */
final class KafkaInboxAdvice implements MethodInterceptor {
    private static final System.Logger LOG = System.getLogger(KafkaInboxAdvice.class.getName());
    private static final ResponseCodec<String> POSITION = ResponseCodec.utf8();
    private static final byte[] NO_BYTES = new byte[0];

    private final Supplier<Inbox> inboxSupplier;
    private volatile Inbox inbox;
    /** Value types already reported as not fingerprinted; bounded by the application's value classes. */
    private final Set<Class<?>> unfingerprinted = ConcurrentHashMap.newKeySet();

    /** Resolved on the first record: the advice is created with the container factory, before the database beans. */
    KafkaInboxAdvice(Supplier<Inbox> inbox) {
        this.inboxSupplier = inbox;
    }

    /** What the advice works with; {@code inbox}'s engine stores every outcome (STORE_ALL). */
    record Inbox(TransactionalRetrySafe inbox, PlatformTransactionManager transactionManager, DataSource dataSource,
            MessageIdExtractor messageIds, RetrySafeObservations observations) {
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
        if (!(args[0] instanceof ConsumerRecord<?, ?> record)) {
            throw new IllegalStateException("retrysafe.kafka.enabled covers record listeners only, but a listener "
                    + "received " + (args[0] == null ? "null" : args[0].getClass().getName())
                    + " (a batch listener); see docs/messaging.md");
        }
        return process(record, invocation);
    }

    private Object process(ConsumerRecord<?, ?> record, MethodInvocation invocation) throws Throwable {
        Inbox in = inbox();
        try (RetrySafeObservations.Observed observed = in.observations().start(KIND, KIND + " " + record.topic(), false)) {
            try {
                process(in, record, invocation, observed);
                return null;
            } catch (Throwable t) {
                observed.error(t);
                throw t;
            }
        }
    }

    private void process(Inbox in, ConsumerRecord<?, ?> record, MethodInvocation invocation,
            RetrySafeObservations.Observed observed) throws Throwable {
        String group = KafkaUtils.getConsumerGroupId();
        if (group == null || group.isBlank()) {
            throw new IllegalStateException("retrysafe.kafka.enabled needs a consumer group (spring.kafka.consumer."
                    + "group-id or @KafkaListener(groupId)): the inbox scope is kafka:<group>:<topic>, but "
                    + position(record) + " was received without one");
        }
        String messageId;
        try {
            messageId = KeyRules.DEFAULT.validate(in.messageIds().messageId(record));
        } catch (InvalidKeyException e) {
            observed.outcome(RetrySafeObservations.INVALID_KEY);
            in.inbox().engine().listener().onInvalidKey(e);
            LOG.log(Level.WARNING, () -> prefix(in) + position(record) + " has no valid message id ("
                    + in.messageIds() + ": " + e.rule() + "); the listener does not run");
            throw e;
        }
        IdempotencyKey key = IdempotencyKey.of(IdempotentRecordProcessor.SCOPE_PREFIX + group + ":" + record.topic(),
                messageId);
        observed.key(key);
        Fingerprint fingerprint = Fingerprint.sha256(valueBytes(record.value()));

        DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
                TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        definition.setName("retrysafe " + key.scope());
        // A failure to begin (no connection) propagates: nothing ran, the error handler tries again.
        TransactionStatus status = in.transactionManager().getTransaction(definition);
        TransactionalRetrySafe.Joined<String> joined;
        try {
            joined = in.inbox().join(DataSourceUtils.getConnection(in.dataSource()), key, fingerprint, POSITION,
                    attempt -> {
                        try {
                            invocation.proceed();
                        } catch (Exception | Error e) {
                            throw e;
                        } catch (Throwable t) {
                            throw new OperationFailedException(t);
                        }
                        return position(record);
                    });
        } catch (Throwable t) {
            in.transactionManager().rollback(status);
            throw t instanceof OperationFailedException && t.getCause() != null ? t.getCause() : t;
        }
        Outcome<String> outcome = joined.outcome();
        observed.outcome(outcome);
        if (!joined.commit()) {
            // Replays and refusals wrote nothing.
            in.transactionManager().rollback(status);
            if (outcome instanceof Outcome.Replayed<String> replayed) {
                LOG.log(Level.DEBUG, () -> prefix(in) + "skipped " + position(record) + " (key " + key.digest()
                        + "): processed before at " + replayed.value());
                return;
            }
            throw refusal(in, record, key, outcome);
        }
        try {
            in.transactionManager().commit(status);
        } catch (RuntimeException e) {
            // Nothing of the listener's was kept: a failure like any other, retried by the error handler.
            observed.outcome(RetrySafeObservations.STORE_UNAVAILABLE);
            StoreUnavailableException failure = joined.commitFailed(e);
            throw new StoreUnavailableException(failure.storeName(), failure.retryAfter(), prefix(in)
                    + "the transaction of " + position(record) + " (key " + key.digest() + ") did not commit: "
                    + e.getMessage(), e);
        }
        joined.committed();
    }

    private static RuntimeException refusal(Inbox in, ConsumerRecord<?, ?> record, IdempotencyKey key,
            Outcome<String> outcome) {
        if (outcome instanceof Outcome.InProgress<String> inProgress) {
            return new InProgressException(prefix(in) + position(record) + ": key " + key.digest()
                    + " is held by another transaction (another consumer of the group?)", inProgress.retryAfter());
        } else if (outcome instanceof Outcome.FingerprintMismatch<String>) {
            LOG.log(Level.WARNING, () -> prefix(in) + position(record) + ": key " + key.digest()
                    + " was processed before with a different payload (the producer reuses message ids)");
            return new FingerprintMismatchException("message id of " + position(record)
                    + " was processed before with a different payload");
        } else if (outcome instanceof Outcome.StoreUnavailable<String> unavailable) {
            return unavailable.failure();
        }
        return new IllegalStateException(prefix(in) + "unexpected outcome " + outcome + " for " + position(record));
    }

    /**
     * The bytes fingerprinted: the value as it came off the wire for {@code byte[]}, {@code String},
     * {@code ByteBuffer}, {@code Bytes}; none for a tombstone. A value the deserializer turned into an
     * object has no stable bytes here: it is not fingerprinted (a reused id with another payload is
     * then replayed, not refused), and said once per type.
     */
    private byte[] valueBytes(Object value) {
        if (value == null) {
            return NO_BYTES;
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
        if (unfingerprinted.add(value.getClass())) {
            LOG.log(Level.INFO, () -> "record values of type " + value.getClass().getName() + " are not fingerprinted: "
                    + "deserialize to String or byte[] (convert in the listener) to have an id reused with another "
                    + "payload refused");
        }
        return NO_BYTES;
    }

    /** Resolves what the advice works with now (at start-up), so that a misconfiguration fails there. */
    void resolve() {
        inbox();
    }

    private Inbox inbox() {
        Inbox in = inbox;
        if (in == null) {
            synchronized (this) {
                if (inbox == null) {
                    inbox = inboxSupplier.get();
                }
                in = inbox;
            }
        }
        return in;
    }

    private static String prefix(Inbox in) {
        return "[" + in.inbox().engine().name() + "] ";
    }

    private static String position(ConsumerRecord<?, ?> record) {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }
}
