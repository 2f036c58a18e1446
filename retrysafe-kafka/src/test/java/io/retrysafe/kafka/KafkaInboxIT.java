package io.retrysafe.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Backoff;
import io.retrysafe.Fingerprint;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.Ledger.Row;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.utils.Bytes;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The processor on its own, against a real PostgreSQL, with records made by hand and dead letters
 * collected in a list: the results a poll loop or a Spring listener adapter acts on.
 */
class KafkaInboxIT {
    private static final String STORE_TABLE = "rs_kafka_inbox";
    /** Short, so that a held id answers "retry later" quickly. */
    private static final Duration LOCK_TIMEOUT = Duration.ofMillis(300);

    private static DataSource ds;
    private static TransactionalRetrySafe transactional;

    private final List<ProducerRecord<String, String>> deadLetters = Collections.synchronizedList(new ArrayList<>());
    private final List<Integer> attempts = Collections.synchronizedList(new ArrayList<>());
    private String topic;

    @BeforeAll
    static void database() throws SQLException {
        ds = TestDatabases.postgres();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(LOCK_TIMEOUT)
                .build();
        store.createSchema();
        Ledger.createTable(ds);
        transactional = TransactionalRetrySafe.of(RetrySafe.builder(store).name("kafka-processor-it").build());
    }

    @BeforeEach
    void newTopic() {
        topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private KafkaInbox<String, String> processor(UnaryOperator<Inbox.Builder> inboxOptions) {
        return processor(inboxOptions, UnaryOperator.identity());
    }

    private KafkaInbox<String, String> processor(UnaryOperator<Inbox.Builder> inboxOptions,
            UnaryOperator<KafkaInbox.Builder<String, String>> options) {
        Inbox inbox = inboxOptions.apply(Inbox.builder(transactional).backoff(Backoff.fixed(Duration.ofMillis(10))))
                .build();
        return options.apply(KafkaInbox.<String, String>builder(inbox, (record, connection, attempt) -> {
                    attempts.add(attempt.number());
                    Ledger.insert(connection, record, "p");
                    if (record.value().startsWith("fail once") && attempt.isFirst()) {
                        throw new IllegalStateException("transient");
                    }
                })
                .consumerGroup("shipping")
                .deadLetters(deadLetters::add))
                .build();
    }

    @Test
    void anIdHeldByAnotherTransactionIsRetriedLaterThenSkippedOnceThatCommits() throws Exception {
        KafkaInbox<String, String> processor = processor(UnaryOperator.identity());
        ConsumerRecord<String, String> record = TestRecords.record(topic, 0, "msg-held", "ship 1");

        // Another consumer of the group (a rebalance moved the partition) is inside its transaction for this id.
        try (Connection holder = ds.getConnection()) {
            holder.setAutoCommit(false);
            TransactionalRetrySafe.Joined<String> held = transactional.join(holder, processor.key(topic, "msg-held"),
                    Fingerprint.sha256("ship 1".getBytes(StandardCharsets.UTF_8)), ResponseCodec.utf8(),
                    attempt -> "elsewhere-0@0");
            assertThat(held.commit()).isTrue();

            InboxResult whileHeld = processor.process(record);
            assertThat(whileHeld).isInstanceOfSatisfying(InboxResult.RetryLater.class,
                    later -> assertThat(later.reason()).isEqualTo(RetryReason.IN_PROGRESS));
            assertThat(whileHeld.isDone()).as("its offset must not be committed").isFalse();
            holder.commit();
        }
        assertThat(processor.process(record)).isEqualTo(new InboxResult.Replayed("elsewhere-0@0"));
        assertThat(attempts).as("the handler never ran here").isEmpty();
        assertThat(deadLetters).isEmpty();
    }

    @Test
    void anotherPayloadUnderAnIdAlreadyProcessedIsDeadLettered() {
        KafkaInbox<String, String> processor = processor(UnaryOperator.identity());
        assertThat(processor.process(TestRecords.record(topic, 0, "msg-1", "ship 1")))
                .isEqualTo(new InboxResult.Processed(1));

        InboxResult other = processor.process(TestRecords.record(topic, 1, "msg-1", "ship 2"));

        assertThat(other).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.FINGERPRINT_MISMATCH);
            assertThat(d.attempts()).isZero();
        });
        assertThat(deadLetters).singleElement().satisfies(dl -> {
            assertThat(dl.topic()).isEqualTo(topic + ".DLT");
            assertThat(dl.value()).isEqualTo("ship 2");
            assertThat(header(dl, DeadLetterHeaders.REASON)).isEqualTo("fingerprint-mismatch");
            assertThat(header(dl, DeadLetterHeaders.ERROR)).isEqualTo(
                    "message id was processed before with a different payload");
            assertThat(header(dl, DeadLetterHeaders.POSITION)).isEqualTo(topic + "-0@1");
            assertThat(header(dl, DeadLetterHeaders.SCOPE)).isEqualTo("kafka:shipping:" + topic);
            assertThat(header(dl, DeadLetterHeaders.MESSAGE_ID)).isEqualTo("msg-1");
        });
        assertThat(attempts).containsExactly(1);
    }

    @Test
    void aFailedAttemptIsRolledBackAndTheNextIsToldItsNumber() throws SQLException {
        KafkaInbox<String, String> processor = processor(UnaryOperator.identity());

        assertThat(processor.process(TestRecords.record(topic, 0, "msg-1", "fail once")))
                .isEqualTo(new InboxResult.Processed(2));

        assertThat(attempts).containsExactly(1, 2);
        assertThat(Ledger.rows(ds, topic)).as("attempt 1's write was rolled back with its claim")
                .containsExactly(new Row("msg-1", "p", "fail once"));
    }

    @Test
    void topicPartitionOffsetCatchesARedeliveryButNotAProducerDuplicate() throws SQLException {
        KafkaInbox<String, String> processor =
                processor(UnaryOperator.identity(), b -> b.messageIds(MessageIds.topicPartitionOffset()));

        assertThat(processor.process(TestRecords.record(topic, 5, null, "ship 1")))
                .isEqualTo(new InboxResult.Processed(1));
        assertThat(processor.process(TestRecords.record(topic, 5, null, "ship 1")))
                .as("the broker redelivers offset 5").isEqualTo(new InboxResult.Replayed(topic + "-0@5"));
        assertThat(processor.process(TestRecords.record(topic, 6, null, "ship 1")))
                .as("the producer sent the same message again: a new offset").isEqualTo(new InboxResult.Processed(1));

        assertThat(Ledger.rows(ds, topic)).as("the limit of offsets as ids: the duplicate took effect")
                .extracting(Row::payload).containsExactly("ship 1", "ship 1");
    }

    @Test
    void aDeadLetterThatIsNotAcknowledgedLeavesTheRecordToBeTriedAgain() {
        AtomicInteger sends = new AtomicInteger();
        KafkaInbox<String, String> processor = KafkaInbox.<String, String>builder(
                        Inbox.builder(transactional).build(),
                        (record, connection, attempt) -> attempts.add(attempt.number()))
                .consumerGroup("shipping")
                .deadLetters(deadLetter -> {
                    if (sends.incrementAndGet() == 1) {
                        throw new IllegalStateException("no leader for partition");
                    }
                    deadLetters.add(deadLetter);
                })
                .build();
        ConsumerRecord<String, String> anonymous = TestRecords.record(topic, 0, null, "ship 1");

        InboxResult first = processor.process(anonymous);
        assertThat(first).isInstanceOfSatisfying(InboxResult.RetryLater.class, later -> {
            assertThat(later.reason()).isEqualTo(RetryReason.DEAD_LETTER_FAILED);
            assertThat(later.detail()).contains("not acknowledged", "no leader for partition");
        });
        assertThat(processor.process(anonymous)).isInstanceOfSatisfying(InboxResult.DeadLetter.class,
                d -> assertThat(d.reason()).isEqualTo(DeadLetterReason.MISSING_MESSAGE_ID));
        assertThat(deadLetters).hasSize(1);
        assertThat(attempts).isEmpty();
    }

    @Test
    void anUnreachableDatabaseLeavesTheRecordToBeTriedAgainWithoutRunningTheHandler() {
        PGSimpleDataSource nowhere = new PGSimpleDataSource();
        nowhere.setURL("jdbc:postgresql://127.0.0.1:1/test");
        nowhere.setConnectTimeout(2);
        KafkaInbox<String, String> processor = processor(b -> b.dataSource(nowhere));

        InboxResult result = processor.process(TestRecords.record(topic, 0, "msg-1", "ship 1"));

        assertThat(result).isInstanceOfSatisfying(InboxResult.RetryLater.class, later -> {
            assertThat(later.reason()).isEqualTo(RetryReason.STORE_UNAVAILABLE);
            assertThat(later.detail()).startsWith("no database connection");
        });
        assertThat(attempts).isEmpty();
        assertThat(deadLetters).as("not the message's fault: never dead-lettered").isEmpty();
    }

    @Test
    void aListenerThatThrowsChangesNothing() {
        KafkaInbox<String, String> processor = processor(b -> b.listener(new InboxListener() {
            @Override
            public void onResult(Delivery delivery, InboxResult result) {
                throw new IllegalStateException("broken metrics");
            }
        }));
        assertThat(processor.process(TestRecords.record(topic, 0, "msg-1", "ship 1")))
                .isEqualTo(new InboxResult.Processed(1));
    }

    @Test
    void aValueOfATypeThatCannotBeFingerprintedIsDeadLetteredWithoutRunningTheHandler() {
        List<ProducerRecord<String, Object>> objects = new ArrayList<>();
        KafkaInbox<String, Object> processor = KafkaInbox.<String, Object>builder(
                        Inbox.builder(transactional).build(),
                        (record, connection, attempt) -> attempts.add(attempt.number()))
                .consumerGroup("shipping")
                .deadLetters(objects::add)
                .build();
        ConsumerRecord<String, Object> record = new ConsumerRecord<>(topic, 0, 3, null, 42);
        record.headers().add(MessageIds.DEFAULT_HEADER, "msg-42".getBytes(StandardCharsets.UTF_8));

        InboxResult result = processor.process(record);

        assertThat(result).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.UNREADABLE_PAYLOAD);
            assertThat(d.error()).contains("java.lang.Integer");
        });
        assertThat(objects).singleElement().satisfies(dl -> assertThat(dl.value()).isEqualTo(42));
        assertThat(attempts).isEmpty();
    }

    @Test
    void aBytesValueIsFingerprintedOverItsBytesLikeTheSameText() {
        KafkaInbox<String, String> text = processor(UnaryOperator.identity());
        KafkaInbox<String, Bytes> bytes = KafkaInbox.<String, Bytes>builder(
                        Inbox.builder(transactional).build(),
                        (record, connection, attempt) -> attempts.add(attempt.number()))
                .consumerGroup("shipping")
                .deadLetters(deadLetter -> { })
                .build();
        assertThat(text.process(TestRecords.record(topic, 0, "msg-1", "ship 1"))).isEqualTo(new InboxResult.Processed(1));
        ConsumerRecord<String, Bytes> same = new ConsumerRecord<>(topic, 0, 1, null,
                Bytes.wrap("ship 1".getBytes(StandardCharsets.UTF_8)));
        same.headers().add(MessageIds.DEFAULT_HEADER, "msg-1".getBytes(StandardCharsets.UTF_8));

        assertThat(bytes.process(same)).isEqualTo(new InboxResult.Replayed(topic + "-0@0"));
    }

    private static String header(ProducerRecord<?, ?> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
