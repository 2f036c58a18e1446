package io.retrysafe.testservices;

import java.lang.reflect.Field;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real Kafka broker in this JVM, in KRaft mode (one node, broker and controller combined), from
 * Kafka's own test kit ({@code org.apache.kafka:kafka-test-common-runtime}). As a JUnit extension it
 * is started once per test class and stopped after it:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final KafkaBroker KAFKA = new KafkaBroker();
 * }</pre>
 *
 * <p>Outside JUnit (an example that runs without a broker): {@link #start()} and {@link #close()}.
 * The module that uses it declares {@code kafka-test-common-runtime} and {@code kafka-clients}'
 * {@code test} jar itself: both are optional here, as Lettuce and jnats are, so that modules not
 * testing Kafka do not get a broker on their class path.
 *
 * <p>Both listeners are bound to 127.0.0.1 on ports the system picks. Group timings are shortened
 * (no initial rebalance delay, sessions down to 1 s, heartbeats of the consumer protocol every
 * 500 ms) so that rebalances and dead members take seconds, not the production defaults' minutes.
 */
public final class KafkaBroker implements BeforeAllCallback, AfterAllCallback, AutoCloseable {
    /** Classic protocol: how soon a killed consumer is out of its group. The broker allows down to 1 s. */
    public static final Duration CLASSIC_SESSION_TIMEOUT = Duration.ofSeconds(3);

    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

    private KafkaClusterTestKit cluster;
    private Admin admin;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    /** Starts the broker; returns once it accepts clients on {@link #bootstrapServers()}. */
    public KafkaBroker start() throws Exception {
        if (cluster != null) {
            throw new IllegalStateException("the broker is already started, at " + bootstrapServers());
        }
        TestKitNodes nodes = new TestKitNodes.Builder()
                .setCombined(true)
                .setNumBrokerNodes(1)
                .setNumControllerNodes(1)
                .build();
        KafkaClusterTestKit.Builder builder = new KafkaClusterTestKit.Builder(nodes)
                // The kit's default is localhost:0; say the address rather than trust name resolution.
                .setConfigProp("listeners", nodes.brokerListenerName().value() + "://127.0.0.1:0,"
                        + nodes.controllerListenerName().value() + "://127.0.0.1:0")
                .setConfigProp("auto.create.topics.enable", "false")
                .setConfigProp("offsets.topic.num.partitions", "1")
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("transaction.state.log.replication.factor", "1")
                .setConfigProp("transaction.state.log.min.isr", "1")
                .setConfigProp("num.network.threads", "2")
                .setConfigProp("num.io.threads", "2")
                .setConfigProp("background.threads", "2")
                // Classic protocol: a new group starts at once; sessions as short as 1 s.
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .setConfigProp("group.min.session.timeout.ms", "1000")
                // Consumer protocol (KIP-848): members learn of a new assignment within 500 ms.
                .setConfigProp("group.consumer.min.heartbeat.interval.ms", "500")
                .setConfigProp("group.consumer.heartbeat.interval.ms", "500");
        cluster = builder.build();
        rebindControllerToLoopback(cluster);
        cluster.format();
        cluster.startup();
        cluster.waitForReadyBrokers();
        admin = Admin.create(Map.of(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers()));
        return this;
    }

    /**
     * The kit binds each controller's port before start-up, on the wildcard address, so that the
     * quorum's addresses are known; that socket is handed to the controller as it is. Closing it
     * makes the kit open the controller's socket itself, on the same port and on the listener's
     * address, 127.0.0.1. Reflection into the kit: if a later Kafka renames these fields, this fails
     * loudly here rather than exposing a port.
     */
    @SuppressWarnings("unchecked")
    private static void rebindControllerToLoopback(KafkaClusterTestKit cluster) throws Exception {
        Field managerField = KafkaClusterTestKit.class.getDeclaredField("socketFactoryManager");
        managerField.setAccessible(true);
        Object manager = managerField.get(cluster);
        Field socketsField = manager.getClass().getDeclaredField("sockets");
        socketsField.setAccessible(true);
        Map<Integer, Map<String, ServerSocketChannel>> sockets =
                (Map<Integer, Map<String, ServerSocketChannel>>) socketsField.get(manager);
        synchronized (manager) {
            for (Map<String, ServerSocketChannel> byListener : sockets.values()) {
                for (ServerSocketChannel channel : byListener.values()) {
                    channel.close();
                }
            }
        }
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        close();
    }

    /** Stops the broker and deletes its data. */
    @Override
    public void close() throws Exception {
        try {
            if (admin != null) {
                admin.close(Duration.ofSeconds(10));
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
            cluster = null;
            admin = null;
        }
    }

    public String bootstrapServers() {
        return cluster.bootstrapServers();
    }

    public Admin admin() {
        return admin;
    }

    public void createTopic(String name, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all()
                .get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    public KafkaProducer<String, String> producer() {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        // One batch in flight per connection. With several, a batch sent to a topic created a moment ago
        // can be refused (NOT_LEADER_OR_FOLLOWER: the broker has not taken up leadership yet) while the
        // batch behind it is appended once it has; the retried first batch is then out of sequence for
        // good (OUT_OF_ORDER_SEQUENCE_NUMBER) and the send times out. Seen here on a loaded machine.
        config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }

    /** A consumer for an idempotent consumer loop: no auto-commit, from the earliest offset. */
    public KafkaConsumer<String, String> consumer(String clientId, String group, GroupProtocol protocol, int maxPollRecords) {
        Map<String, Object> config = consumerConfig(bootstrapServers(), group, protocol, maxPollRecords);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        return new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
    }

    public static Map<String, Object> consumerConfig(String bootstrapServers, String group, GroupProtocol protocol,
            int maxPollRecords) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol.name);
        if (protocol == GroupProtocol.CLASSIC) {
            // The consumer protocol takes both from the broker and refuses them here.
            config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, (int) CLASSIC_SESSION_TIMEOUT.toMillis());
            config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
        }
        return config;
    }

    /**
     * Everything on {@code topic} now, from the beginning of each of its partitions, as raw bytes, read
     * by a consumer of no group; fails if it cannot be read within {@code bound}.
     */
    public List<ConsumerRecord<byte[], byte[]>> readAll(String topic, Duration bound) throws Exception {
        List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
        Map<String, Object> config = consumerConfig(bootstrapServers(), "reader-" + topic, GroupProtocol.CLASSIC, 500);
        try (KafkaConsumer<byte[], byte[]> reader = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = reader.partitionsFor(topic, bound).stream()
                    .map(info -> new TopicPartition(topic, info.partition())).toList();
            reader.assign(partitions);
            reader.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = reader.endOffsets(partitions);
            long deadline = System.nanoTime() + bound.toNanos();
            while (partitions.stream().anyMatch(tp -> reader.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " within " + bound);
                }
                reader.poll(Duration.ofMillis(100)).forEach(all::add);
            }
        }
        return all;
    }

    /** The group's committed offset for {@code partition}, or null if it has none. */
    public Long committedOffset(String group, TopicPartition partition) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        OffsetAndMetadata offset = offsets.get(partition);
        return offset == null ? null : offset.offset();
    }
}
