package io.retrysafe.spring.kafka;

import io.retrysafe.inbox.tck.ConsumerSpec;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.inbox.tck.InboxHarness;
import io.retrysafe.inbox.tck.OrderedInboxContract;
import io.retrysafe.inbox.tck.ReceivedMessage;
import io.retrysafe.inbox.tck.TestMessage;
import io.retrysafe.kafka.MessageIds;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The inbox contract on Spring Kafka: a Spring Boot application per consumer, with a
 * {@code @KafkaListener} record listener ({@link KafkaContractApp}) under
 * {@code retrysafe.kafka.enabled=true} and {@code retrysafe.kafka.dead-letters=inbox}, on an
 * in-process KRaft broker and PostgreSQL. The spec's handler, payload rule and inbox listener are
 * beans of the application; its attempts and back-off are the {@code retrysafe.kafka.*} properties.
 */
class SpringKafkaInboxContractIT extends OrderedInboxContract {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    static final String STORE_TABLE = "rs_spring_kafka_contract_inbox";
    private static final Duration BOUND = Duration.ofSeconds(30);

    @Override
    protected InboxHarness harness() {
        return new InboxHarness() {
            @Override
            public DataSource dataSource() {
                return TestDatabases.postgres();
            }

            @Override
            public Channel channel(String name) throws Exception {
                return new SpringKafkaChannel(name);
            }
        };
    }

    /** The application's properties for a consumer of {@code topic} in {@code group}. */
    static String[] arguments(String bootstrap, String group, String topic, int maxAttempts, Duration backoff) {
        List<String> args = new ArrayList<>();
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("spring.datasource.url", TestDatabases.postgresJdbcUrl());
        properties.put("spring.datasource.username", TestDatabases.postgresUser());
        properties.put("spring.datasource.password", TestDatabases.postgresPassword());
        properties.put("spring.datasource.hikari.maximum-pool-size", 3);
        properties.put("spring.datasource.hikari.minimum-idle", 1);
        properties.put("spring.kafka.bootstrap-servers", bootstrap);
        properties.put("spring.kafka.consumer.group-id", group);
        properties.put("spring.kafka.consumer.auto-offset-reset", "earliest");
        properties.put("spring.kafka.consumer.value-deserializer", ByteArrayDeserializer.class.getName());
        properties.put("spring.kafka.producer.value-serializer", ByteArraySerializer.class.getName());
        // A killed member is out of the group after 3 s rather than the default 45 s.
        properties.put("spring.kafka.consumer.properties.session.timeout.ms",
                KafkaBroker.CLASSIC_SESSION_TIMEOUT.toMillis());
        properties.put("spring.kafka.consumer.heartbeat-interval", "500ms");
        properties.put("retrysafe.kafka.enabled", true);
        properties.put("retrysafe.kafka.dead-letters", "inbox");
        properties.put("retrysafe.kafka.max-attempts", maxAttempts);
        properties.put("retrysafe.kafka.backoff", backoff.toMillis() + "ms");
        properties.put("retrysafe.kafka.max-backoff", backoff.toMillis() + "ms");
        properties.put("retrysafe.store.table", STORE_TABLE);
        properties.put("retrysafe.store.initialize-schema", true);
        properties.put("retrysafe.store.lock-timeout", "1s");
        properties.put("contract.topic", topic);
        properties.forEach((name, value) -> args.add("--" + name + "=" + value));
        return args.toArray(String[]::new);
    }

    /** One topic of two partitions, its dead-letter topic, and one consumer group. */
    private static final class SpringKafkaChannel implements InboxHarness.Channel {
        private final String topic;
        private final String group;
        private final KafkaProducer<String, byte[]> producer;
        private final List<AutoCloseable> running = new ArrayList<>();

        SpringKafkaChannel(String name) throws Exception {
            this.topic = name;
            this.group = "group-" + name;
            KAFKA.createTopic(topic, 2);
            KAFKA.createTopic(topic + ".DLT", 1);
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, KAFKA.bootstrapServers());
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1); // see KafkaBroker.producer()
            this.producer = new KafkaProducer<>(config, new StringSerializer(), new ByteArraySerializer());
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
            // The spec's back-off is fixed: one wait, the first and the longest.
            ConfigurableApplicationContext context = new SpringApplicationBuilder(KafkaContractApp.class)
                    .web(WebApplicationType.NONE)
                    .initializers(KafkaContractApp.beans(spec.handler(), spec.payloadBytes(), spec.listener()))
                    .run(arguments(KAFKA.bootstrapServers(), group, topic, spec.maxAttempts(), spec.backoff().cap(1)));
            InboxHarness.RunningConsumer stop = context::close;
            running.add(stop);
            return stop;
        }

        @Override
        public List<ReceivedMessage> deadLetters() throws Exception {
            List<ReceivedMessage> read = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : KAFKA.readAll(topic + ".DLT", BOUND)) {
                Map<String, String> headers = new LinkedHashMap<>();
                for (Header h : r.headers()) {
                    headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8));
                }
                read.add(new ReceivedMessage(r.value(), headers));
            }
            return read;
        }

        @Override
        public InboxHarness.DyingConsumer consumeInChildJvm() throws Exception {
            ChildJvm child = ChildJvm.start(KafkaContractChild.class, Effects.COMMITTED,
                    KafkaContractChild.arguments(KAFKA.bootstrapServers(), group, topic, scope()));
            running.add(child);
            return new InboxHarness.DyingConsumer() {
                @Override
                public void awaitCommitted(Duration bound) throws Exception {
                    child.awaitLine(bound);
                }

                @Override
                public void kill() throws Exception {
                    child.kill();
                }

                @Override
                public void close() throws Exception {
                    child.close();
                }
            };
        }

        @Override
        public void close() throws Exception {
            try {
                for (AutoCloseable c : running) {
                    c.close();
                }
            } finally {
                producer.close(Duration.ofSeconds(10));
            }
        }
    }
}
