package io.retrysafe.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.Backoff;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.Ledger.Row;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The consumer loop against a real Kafka broker (in this JVM, KRaft) and a real PostgreSQL: each
 * record's business effect happens once, whatever the broker or the producer delivers twice.
 */
class RetrySafeKafkaConsumerIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final String STORE_TABLE = "rs_kafka_inbox";
    /** Every wait of a test; a test takes a few seconds when nothing is wrong. */
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(200);
    private static final String ENGINE_NAME = "kafka-it";
    /** How long a claim waits for another transaction holding the same id before "retry later". */
    private static final Duration LOCK_TIMEOUT = Duration.ofSeconds(1);

    private static DataSource ds;
    private static JdbcIdempotencyStore store;

    private final List<RunningLoop> loops = new ArrayList<>();
    /** What every loop of the test processed, in order per loop. */
    private final List<Seen> seen = Collections.synchronizedList(new ArrayList<>());
    private String topic;
    private String group;
    private KafkaProducer<String, String> producer;
    private SimpleMeterRegistry registry;

    @BeforeAll
    static void database() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(LOCK_TIMEOUT).build();
        store.createSchema();
        Ledger.createTable(ds);
    }

    @BeforeEach
    void names() {
        String id = UUID.randomUUID().toString().substring(0, 8);
        topic = "orders-" + id;
        group = "shipping-" + id;
        producer = KAFKA.producer();
        registry = new SimpleMeterRegistry();
    }

    @AfterEach
    void stopEverything() throws Exception {
        try {
            for (RunningLoop loop : loops) {
                loop.stop();
            }
        } finally {
            producer.close(Duration.ofSeconds(10));
        }
    }

    @Test
    void everyMessagePublishedTwiceTakesEffectOnce() throws Exception {
        KAFKA.createTopic(topic, 3);
        int messages = 40;
        // A producer that retries after a lost acknowledgement: each message again, same id, same payload.
        for (int copy = 0; copy < 2; copy++) {
            publish(messages(0, messages));
        }

        RunningLoop loop = start("a", GroupProtocol.CLASSIC, 20, UnaryOperator.identity());
        await().atMost(BOUND).until(() -> seen.size() >= 2 * messages);
        loop.stop();

        assertThat(seen).hasSize(2 * messages);
        assertThat(results(InboxResult.Processed.class)).hasSize(messages);
        assertThat(results(InboxResult.Replayed.class)).hasSize(messages);
        // Each message's first copy ran the handler; its second was skipped, pointing at the first.
        Map<String, List<Seen>> byId = seen.stream().collect(Collectors.groupingBy(Seen::messageId));
        assertThat(byId).hasSize(messages).allSatisfy((id, copies) -> {
            assertThat(copies).hasSize(2);
            assertThat(copies.get(0).result()).isEqualTo(new InboxResult.Processed(1));
            assertThat(copies.get(1).result()).isEqualTo(new InboxResult.Replayed(copies.get(0).position()));
        });
        assertThat(Ledger.rows(ds, topic)).hasSize(messages)
                .extracting(Row::messageId).doesNotHaveDuplicates();
        assertThat(requests("executed")).isEqualTo(messages);
        assertThat(requests("replayed")).isEqualTo(messages);
        assertThat(committedTotal(3)).as("offsets committed past every record").isEqualTo(2L * messages);
    }

    @ParameterizedTest
    @EnumSource(GroupProtocol.class)
    void twoConsumersOfOneGroupTakeEachEffectOnceThroughARebalanceInTheMiddleOfABatch(GroupProtocol protocol)
            throws Exception {
        KAFKA.createTopic(topic, 4);
        int wave = 40;
        publish(messages(0, wave));

        // Consumer a stops inside its first record until the group is rebalancing for consumer b, then
        // finishes its batch: the partitions move while a holds records of them.
        CountDownLatch aInsideFirstRecord = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        AtomicReference<Throwable> rebalanceNotSeen = new AtomicReference<>();
        start("a", protocol, 10, (record, connection, attempt) -> {
            if (first.compareAndSet(true, false)) {
                aInsideFirstRecord.countDown();
                try {
                    await().atMost(BOUND).until(() -> rebalancing(protocol));
                } catch (Throwable t) {
                    rebalanceNotSeen.set(t);
                }
            }
            Ledger.insert(connection, record, "a");
        }, UnaryOperator.identity());
        assertThat(aInsideFirstRecord.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        start("b", protocol, 10, UnaryOperator.identity());

        // Once b owns partitions, a second wave reaches both (its keys hash to all four partitions).
        await().atMost(BOUND).until(() -> !assignment("b").isEmpty());
        publish(messages(wave, 2 * wave));
        await().atMost(BOUND).until(() -> Ledger.rows(ds, topic).size() >= 2 * wave);
        for (RunningLoop loop : loops) {
            loop.stop();
        }

        assertThat(rebalanceNotSeen.get()).as("a saw the group rebalance while inside its batch").isNull();
        List<Row> rows = Ledger.rows(ds, topic);
        assertThat(rows).hasSize(2 * wave).extracting(Row::messageId).doesNotHaveDuplicates();
        assertThat(rows).extracting(Row::consumer).as("both consumers processed records").contains("a", "b");
        assertThat(results(InboxResult.Processed.class)).hasSize(2 * wave);
        assertThat(committedTotal(4)).isEqualTo(2 * wave);
    }

    @Test
    void aPoisonMessageGoesToTheDeadLetterTopicAfterMaxAttemptsAndTheRecordsBehindItAreProcessed()
            throws Exception {
        KAFKA.createTopic(topic, 1);
        KAFKA.createTopic(topic + ".DLT", 1);
        publish(List.of(new Message("msg-1", "order", "ship 1"), new Message("msg-poison", "order", "poison"),
                new Message("msg-2", "order", "ship 2"), new Message("msg-3", "order", "ship 3")));

        List<Integer> poisonAttempts = Collections.synchronizedList(new ArrayList<>());
        start("a", GroupProtocol.CLASSIC, 10, (record, connection, attempt) -> {
            Ledger.insert(connection, record, "a"); // rolled back when the handler throws
            if (record.value().equals("poison")) {
                poisonAttempts.add(attempt.number());
                throw new IllegalStateException("cannot ship a poison pill");
            }
        }, b -> b.maxAttempts(3).backoff(Backoff.exponential(Duration.ofMillis(10), Duration.ofMillis(50))));

        await().atMost(BOUND).until(() -> seen.size() >= 4);
        assertThat(seen).extracting(Seen::messageId, s -> summary(s.result())).containsExactly(
                tuple("msg-1", new InboxResult.Processed(1)),
                tuple("msg-poison", deadLettered(DeadLetterReason.HANDLER_FAILED, 3)),
                tuple("msg-2", new InboxResult.Processed(1)),
                tuple("msg-3", new InboxResult.Processed(1)));
        assertThat(poisonAttempts).containsExactly(1, 2, 3);
        assertThat(Ledger.rows(ds, topic)).extracting(Row::messageId).containsExactly("msg-1", "msg-2", "msg-3");

        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".DLT", 1);
        assertThat(deadLetters).singleElement().satisfies(dl -> {
            assertThat(dl.key()).isEqualTo("order");
            assertThat(dl.value()).isEqualTo("poison");
            assertThat(Ledger.header(dl, DeadLetterHeaders.REASON)).isEqualTo("handler-failed");
            assertThat(Ledger.header(dl, DeadLetterHeaders.ERROR))
                    .isEqualTo("java.lang.IllegalStateException: cannot ship a poison pill");
            assertThat(Ledger.header(dl, DeadLetterHeaders.ATTEMPTS)).isEqualTo("3");
            assertThat(Ledger.header(dl, DeadLetterHeaders.POSITION)).isEqualTo(topic + "-0@1");
            assertThat(Ledger.header(dl, DeadLetterHeaders.SCOPE)).isEqualTo("kafka:" + group + ":" + topic);
            assertThat(Ledger.header(dl, DeadLetterHeaders.MESSAGE_ID)).isEqualTo("msg-poison");
            assertThat(Ledger.header(dl, MessageIds.DEFAULT_HEADER)).as("the original headers travel along")
                    .isEqualTo("msg-poison");
        });
        await().atMost(BOUND).until(() -> Long.valueOf(4).equals(
                KAFKA.committedOffset(group, new TopicPartition(topic, 0))));
    }

    @Test
    void aMessageWithoutAnIdOrWithAnInvalidOneGoesToTheDeadLetterTopicWithItsReason() throws Exception {
        KAFKA.createTopic(topic, 1);
        KAFKA.createTopic(topic + ".DLT", 1);
        publish(List.of(new Message(null, "order", "anonymous"), new Message("clé-1", "order", "not ascii"),
                new Message("msg-ok", "order", "fine")));

        start("a", GroupProtocol.CLASSIC, 10, UnaryOperator.identity());
        await().atMost(BOUND).until(() -> seen.size() >= 3);

        assertThat(seen).extracting(s -> summary(s.result())).containsExactly(
                deadLettered(DeadLetterReason.MISSING_MESSAGE_ID, 0),
                deadLettered(DeadLetterReason.INVALID_MESSAGE_ID, 0),
                new InboxResult.Processed(1));
        assertThat(Ledger.rows(ds, topic)).as("the handler ran for the valid id only")
                .containsExactly(new Row("msg-ok", "a", "fine"));
        List<ConsumerRecord<String, String>> deadLetters = readAll(topic + ".DLT", 2);
        assertThat(deadLetters).extracting(ConsumerRecord::value).containsExactly("anonymous", "not ascii");
        assertThat(deadLetters).extracting(dl -> Ledger.header(dl, DeadLetterHeaders.REASON))
                .containsExactly("missing-message-id", "invalid-message-id");
        assertThat(deadLetters).extracting(dl -> Ledger.header(dl, DeadLetterHeaders.ERROR)).containsExactly(
                "io.retrysafe.InvalidKeyException: idempotency key is missing",
                "io.retrysafe.InvalidKeyException: idempotency key must be printable ASCII (0x20-0x7E), but has "
                        + "character 0xe9 at index 2");
        assertThat(deadLetters).extracting(dl -> Ledger.header(dl, DeadLetterHeaders.ATTEMPTS))
                .containsExactly("0", "0");
        assertThat(requests("missing_key")).isEqualTo(1);
        assertThat(requests("invalid_key")).isEqualTo(1);
        assertThat(requests("executed")).isEqualTo(1);
        await().atMost(BOUND).until(() -> Long.valueOf(3).equals(
                KAFKA.committedOffset(group, new TopicPartition(topic, 0))));
    }

    @Test
    void aRecordWhoseIdIsHeldByAnotherTransactionStopsItsPartitionUntilReleasedWhileOtherPartitionsGoOn()
            throws Exception {
        KAFKA.createTopic(topic, 2);
        publish(List.of(new Message("msg-held", "order-1", "ship 1", 0), new Message("msg-after", "order-2", "ship 2", 0),
                new Message("msg-other", "order-3", "ship 3", 1)));
        TopicPartition held = new TopicPartition(topic, 0);
        TopicPartition other = new TopicPartition(topic, 1);

        // A consumer of the group that lost the partition in a rebalance is still inside its transaction.
        try (Connection holder = ds.getConnection()) {
            holder.setAutoCommit(false);
            TransactionalRetrySafe.of(RetrySafe.builder(store).build()).join(holder,
                    IdempotencyKey.of(KafkaInbox.SCOPE_PREFIX + group + ":" + topic, "msg-held"),
                    Fingerprint.sha256("ship 1".getBytes(StandardCharsets.UTF_8)), ResponseCodec.utf8(),
                    attempt -> "elsewhere");
            start("a", GroupProtocol.CLASSIC, 10, UnaryOperator.identity());

            await().atMost(BOUND).until(() -> Long.valueOf(1).equals(KAFKA.committedOffset(group, other)));
            await().atMost(BOUND).until(() -> seenOf("msg-held").stream()
                    .anyMatch(r -> r instanceof InboxResult.RetryLater));
            assertThat(seenOf("msg-other")).containsExactly(new InboxResult.Processed(1));
            assertThat(seenOf("msg-after")).as("behind the held record: not read yet").isEmpty();
            assertThat(KAFKA.committedOffset(group, held)).as("nothing committed past the held record").isNull();
            holder.commit();
        }

        await().atMost(BOUND).until(() -> Long.valueOf(2).equals(KAFKA.committedOffset(group, held)));
        assertThat(seenOf("msg-held")).last().isEqualTo(new InboxResult.Replayed("elsewhere"));
        assertThat(seenOf("msg-held")).filteredOn(r -> !(r instanceof InboxResult.RetryLater)).hasSize(1);
        assertThat(seenOf("msg-after")).containsExactly(new InboxResult.Processed(1));
        assertThat(Ledger.rows(ds, topic)).extracting(Row::messageId)
                .containsExactlyInAnyOrder("msg-after", "msg-other");
        assertThat(requests("in_progress")).isPositive();
    }

    // ------------------------------------------------------------------------------------------ helpers

    private record Message(String id, String key, String value, Integer partition) {
        Message(String id, String key, String value) {
            this(id, key, value, null);
        }
    }

    private static List<Message> messages(int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> new Message("msg-" + i, "order-" + i, "ship " + i)).toList();
    }

    private List<InboxResult> seenOf(String messageId) {
        synchronized (seen) {
            return seen.stream().filter(s -> messageId.equals(s.messageId())).map(Seen::result).toList();
        }
    }

    private void publish(List<Message> messages) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (Message m : messages) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, m.partition(), m.key(), m.value());
            if (m.id() != null) {
                record.headers().add(MessageIds.DEFAULT_HEADER, m.id().getBytes(StandardCharsets.UTF_8));
            }
            sent.add(producer.send(record));
        }
        for (Future<RecordMetadata> f : sent) {
            f.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** What one loop saw: who, which record, and the processor's result. */
    private record Seen(String consumer, String messageId, String position, InboxResult result) {
    }

    private RunningLoop start(String name, GroupProtocol protocol, int maxPollRecords,
            UnaryOperator<Inbox.Builder> inboxOptions) {
        return start(name, protocol, maxPollRecords, (record, connection, attempt) -> Ledger.insert(connection, record,
                name), inboxOptions);
    }

    private RunningLoop start(String name, GroupProtocol protocol, int maxPollRecords,
            RecordHandler<String, String> handler,
            UnaryOperator<Inbox.Builder> inboxOptions) {
        MicrometerRetrySafeListener metrics = MicrometerRetrySafeListener.builder(registry, ENGINE_NAME)
                .source("kafka").build();
        TransactionalRetrySafe transactional = TransactionalRetrySafe.of(
                RetrySafe.builder(store).name(ENGINE_NAME).listener(metrics).build());
        Inbox inbox = inboxOptions.apply(Inbox.builder(transactional)
                .listener(new InboxListener() {
                    @Override
                    public void onResult(Delivery delivery, InboxResult result) {
                        seen.add(new Seen(name, delivery.messageId(), delivery.position(), result));
                    }
                })).build();
        KafkaInbox<String, String> processor = KafkaInbox.builder(inbox, handler)
                .consumerGroup(group)
                .deadLetters(DeadLetterPublisher.of(producer))
                .build();
        RetrySafeKafkaConsumer<String, String> loop = RetrySafeKafkaConsumer
                .builder(KAFKA.consumer(name, group, protocol, maxPollRecords), processor)
                .topics(topic).pollTimeout(POLL_TIMEOUT).build();
        RunningLoop running = new RunningLoop(name, loop);
        loops.add(running);
        return running;
    }

    /** A loop on its own thread; {@link #stop()} shuts it down and checks that it ended cleanly. */
    private static final class RunningLoop {
        private final RetrySafeKafkaConsumer<String, String> loop;
        private final Thread thread;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();
        private boolean stopped;

        RunningLoop(String name, RetrySafeKafkaConsumer<String, String> loop) {
            this.loop = loop;
            this.thread = new Thread(() -> {
                try {
                    loop.run();
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "consumer-loop-" + name);
            thread.setDaemon(true);
            thread.start();
        }

        void stop() throws InterruptedException {
            if (stopped) {
                return;
            }
            stopped = true;
            loop.shutdown();
            thread.join(BOUND.toMillis());
            assertThat(thread.isAlive()).as("%s stopped within %s", thread.getName(), BOUND).isFalse();
            assertThat(failure.get()).as("%s ended without an exception", thread.getName()).isNull();
        }
    }

    /** A dead letter as {@link #summary} shows it. */
    private static String deadLettered(DeadLetterReason reason, int attempts) {
        return "dead-lettered " + reason + " after " + attempts;
    }

    /** The result itself, or for a dead letter its reason and attempts (its headers are checked on the topic). */
    private static Object summary(InboxResult result) {
        return result instanceof InboxResult.DeadLetter d ? deadLettered(d.reason(), d.attempts()) : result;
    }

    private List<InboxResult> results(Class<? extends InboxResult> type) {
        synchronized (seen) {
            return seen.stream().map(Seen::result).filter(type::isInstance).toList();
        }
    }

    private double requests(String outcome) {
        return registry.get(MicrometerRetrySafeListener.REQUESTS)
                .tags("name", ENGINE_NAME, "source", "kafka", "outcome", outcome).counter().count();
    }

    private long committedTotal(int partitions) throws Exception {
        long total = 0;
        for (int p = 0; p < partitions; p++) {
            Long offset = KAFKA.committedOffset(group, new TopicPartition(topic, p));
            total += offset == null ? 0 : offset;
        }
        return total;
    }

    /** Classic: the coordinator waits for members to rejoin; consumer protocol: b is a member already. */
    private boolean rebalancing(GroupProtocol protocol) throws Exception {
        ConsumerGroupDescription description = KAFKA.admin().describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        return protocol == GroupProtocol.CLASSIC ? description.groupState() == GroupState.PREPARING_REBALANCE
                : description.members().size() >= 2;
    }

    /** The partitions the group's member with client id {@code clientId} owns, as the coordinator sees it. */
    private Set<TopicPartition> assignment(String clientId) throws Exception {
        ConsumerGroupDescription description = KAFKA.admin().describeConsumerGroups(List.of(group))
                .describedGroups().get(group).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        return description.members().stream().filter(m -> m.clientId().equals(clientId))
                .flatMap(m -> m.assignment().topicPartitions().stream()).collect(Collectors.toSet());
    }

    private List<ConsumerRecord<String, String>> readAll(String deadLetterTopic, int expected) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers());
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> reader = new KafkaConsumer<>(config, new StringDeserializer(),
                new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(deadLetterTopic, 0);
            reader.assign(List.of(partition));
            reader.seekToBeginning(List.of(partition));
            await().atMost(BOUND).until(() -> {
                reader.poll(POLL_TIMEOUT).forEach(records::add);
                return records.size() >= expected;
            });
        }
        assertThat(records).hasSize(expected);
        return records;
    }
}
