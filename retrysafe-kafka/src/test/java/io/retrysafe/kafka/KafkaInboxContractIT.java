package io.retrysafe.kafka;

import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.tck.ConsumerSpec;
import io.retrysafe.inbox.tck.InboxHarness;
import io.retrysafe.inbox.tck.OrderedInboxContract;
import io.retrysafe.inbox.tck.ReceivedMessage;
import io.retrysafe.inbox.tck.TestMessage;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The inbox contract on plain Kafka: {@link RetrySafeKafkaConsumer} and {@link KafkaInbox}
 * on an in-process KRaft broker, PostgreSQL as the inbox. A partition delivers in order.
 */
class KafkaInboxContractIT extends OrderedInboxContract {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    static final String STORE_TABLE = "rs_kafka_contract_inbox";
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Duration POLL_TIMEOUT = Duration.ofMillis(200);

    private static DataSource ds;
    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void database() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(Duration.ofSeconds(1)).build();
        store.createSchema();
    }

    @Override
    protected InboxHarness harness() {
        return new InboxHarness() {
            @Override
            public DataSource dataSource() {
                return ds;
            }

            @Override
            public Channel channel(String name) throws Exception {
                return new KafkaChannel(name);
            }
        };
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** One topic of two partitions, its dead-letter topic, and one consumer group. */
    private static final class KafkaChannel implements InboxHarness.Channel {
        private final String topic;
        private final String group;
        private final KafkaProducer<String, byte[]> producer;
        private final KafkaProducer<byte[], byte[]> deadLetterProducer;
        private final List<AutoCloseable> running = new ArrayList<>();

        KafkaChannel(String name) throws Exception {
            this.topic = name;
            this.group = "group-" + name;
            KAFKA.createTopic(topic, 2);
            KAFKA.createTopic(topic + KafkaInbox.DEFAULT_DEAD_LETTER_SUFFIX, 1);
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers());
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
            this.producer = new KafkaProducer<>(config, new StringSerializer(), new org.apache.kafka.common
                    .serialization.ByteArraySerializer());
            this.deadLetterProducer = producer(KAFKA.bootstrapServers());
        }

        @Override
        public String scope() {
            return "kafka:" + group + ":" + topic;
        }

        @Override
        public void publish(TestMessage message) throws Exception {
            // Without an ordering key every message goes to partition 0: the contract's results are in publish order.
            ProducerRecord<String, byte[]> record = message.orderingKey() == null
                    ? new ProducerRecord<>(topic, 0, null, message.payload())
                    : new ProducerRecord<>(topic, message.orderingKey(), message.payload());
            if (message.id() != null) {
                record.headers().add(MessageIds.DEFAULT_HEADER, message.id().getBytes(StandardCharsets.UTF_8));
            }
            message.headers().forEach((k, v) -> record.headers().add(k, v.getBytes(StandardCharsets.UTF_8)));
            producer.send(record).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        }

        @Override
        public InboxHarness.RunningConsumer consume(ConsumerSpec spec) {
            TransactionalRetrySafe transactional = TransactionalRetrySafe.of(
                    RetrySafe.builder(store).name("kafka-contract").build());
            Inbox inbox = Inbox.builder(transactional)
                    .maxAttempts(spec.maxAttempts())
                    .backoff(spec.backoff())
                    .payloadBytes(spec.payloadBytes())
                    .listener(spec.listener())
                    .build();
            KafkaInbox<byte[], byte[]> processor = KafkaInbox.<byte[], byte[]>builder(
                            inbox, (record, connection, attempt) -> spec.handler().handle(record.value(), connection, attempt))
                    .consumerGroup(group)
                    .deadLetters(DeadLetterPublisher.of(deadLetterProducer))
                    .build();
            KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                    KafkaBroker.consumerConfig(KAFKA.bootstrapServers(), group, GroupProtocol.CLASSIC, 10),
                    new ByteArrayDeserializer(), new ByteArrayDeserializer());
            RetrySafeKafkaConsumer<byte[], byte[]> loop = RetrySafeKafkaConsumer.builder(consumer, processor)
                    .topics(topic).pollTimeout(POLL_TIMEOUT).build();
            Thread thread = new Thread(loop, "contract-loop-" + topic);
            thread.setDaemon(true);
            thread.start();
            InboxHarness.RunningConsumer stop = () -> {
                loop.shutdown();
                thread.join(BOUND.toMillis());
                if (thread.isAlive()) {
                    throw new AssertionError("the loop of " + topic + " did not stop within " + BOUND);
                }
            };
            running.add(stop);
            return stop;
        }

        @Override
        public List<ReceivedMessage> deadLetters() {
            String deadLetterTopic = topic + KafkaInbox.DEFAULT_DEAD_LETTER_SUFFIX;
            TopicPartition partition = new TopicPartition(deadLetterTopic, 0);
            Map<String, Object> config = KafkaBroker.consumerConfig(KAFKA.bootstrapServers(), "reader-" + topic,
                    GroupProtocol.CLASSIC, 500);
            List<ReceivedMessage> read = new ArrayList<>();
            try (KafkaConsumer<String, byte[]> reader = new KafkaConsumer<>(config, new StringDeserializer(),
                    new ByteArrayDeserializer())) {
                reader.assign(List.of(partition));
                reader.seekToBeginning(List.of(partition));
                long end = reader.endOffsets(List.of(partition)).get(partition);
                while (reader.position(partition) < end) {
                    for (ConsumerRecord<String, byte[]> r : reader.poll(POLL_TIMEOUT)) {
                        Map<String, String> headers = new LinkedHashMap<>();
                        for (Header h : r.headers()) {
                            headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
                        }
                        read.add(new ReceivedMessage(r.value(), headers));
                    }
                }
            }
            return read;
        }

        @Override
        public InboxHarness.DyingConsumer consumeInChildJvm() throws Exception {
            ChildJvm child = ChildJvm.start(KafkaContractChild.class, io.retrysafe.inbox.tck.Effects.COMMITTED,
                    KAFKA.bootstrapServers(), group, topic, scope(), TestDatabases.postgresJdbcUrl(),
                    TestDatabases.postgresUser(), TestDatabases.postgresPassword(), STORE_TABLE);
            running.add(child);
            return InboxHarness.DyingConsumer.of(child::awaitLine, child::kill, child);
        }

        @Override
        public void close() throws Exception {
            try {
                for (AutoCloseable c : running) {
                    c.close();
                }
            } finally {
                producer.close(Duration.ofSeconds(10));
                deadLetterProducer.close(Duration.ofSeconds(10));
            }
        }
    }
}
