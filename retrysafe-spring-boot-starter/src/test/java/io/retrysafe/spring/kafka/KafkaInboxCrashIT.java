package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A Spring Kafka consumer killed with SIGKILL between its database commit and its offset commit:
 * the group's next consumer gets the record again, and the inbox keeps the listener from running twice.
 */
class KafkaInboxCrashIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final Duration BOUND = Duration.ofSeconds(60);

    private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private final String ledger = "rs_spring_kafka_crash_ledger_" + suffix;
    private final String records = "rs_spring_kafka_crash_inbox_" + suffix;
    private final String topic = "orders-crash-" + suffix;
    private final String group = "booking-crash-" + suffix;
    private JdbcTemplate jdbc;
    private ChildJvm child;
    private ConfigurableApplicationContext next;

    @BeforeEach
    void topicAndTable() throws Exception {
        for (String t : List.of(topic, topic + "-batch")) {
            KAFKA.createTopic(t, 1);
            KAFKA.createTopic(t + ".DLT", 1);
        }
        jdbc = new JdbcTemplate(TestDatabases.postgres());
        jdbc.execute("CREATE TABLE " + ledger + " (id bigserial PRIMARY KEY, topic text NOT NULL, message_id text,"
                + " payload text)");
    }

    @AfterEach
    void cleanUp() throws Exception {
        try {
            if (next != null) {
                next.close();
            }
            if (child != null) {
                child.close();
            }
        } finally {
            jdbc.execute("DROP TABLE IF EXISTS " + ledger);
            jdbc.execute("DROP TABLE IF EXISTS " + records);
        }
    }

    @Test
    void aConsumerKilledAfterItsDatabaseCommitAndBeforeItsOffsetCommitIsReplayedByTheNext() throws Exception {
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, "order-1", "book order 1");
            record.headers().add("idempotency-key", "msg-crash".getBytes(StandardCharsets.UTF_8));
            producer.send(record).get(30, TimeUnit.SECONDS);
        }
        TopicPartition partition = new TopicPartition(topic, 0);

        child = ChildJvm.start(KafkaInboxCrashChild.class, KafkaInboxTestApp.COMMITTED, arguments());
        assertThat(child.awaitLine(BOUND)).as("the id the child committed").isEqualTo("msg-crash");
        child.kill();

        assertThat(payloads()).as("the child's booking, committed with its message id").containsExactly("book order 1");
        assertThat(KAFKA.committedOffset(group, partition)).as("the child died before committing its offset").isNull();

        // The group's next consumer gets the record again once the dead member's session expired.
        next = new SpringApplicationBuilder(KafkaInboxTestApp.class).web(WebApplicationType.NONE).run(arguments());
        MeterRegistry meters = next.getBean(MeterRegistry.class);
        await().atMost(BOUND).until(() -> Long.valueOf(1).equals(KAFKA.committedOffset(group, partition)));
        assertThat(meters.get("retrysafe.requests").tags("source", "kafka", "outcome", "replayed").counter().count())
                .isEqualTo(1);
        assertThat(meters.get("retrysafe.requests").tags("source", "kafka", "outcome", "executed").counter().count())
                .as("the listener did not run in this JVM").isZero();
        assertThat(next.getBean(KafkaInboxTestApp.Listeners.class).calls).isEmpty();
        assertThat(payloads()).as("the booking is there once").containsExactly("book order 1");
    }

    @Test
    void aBatchConsumerKilledAfterItsRunCommittedAndBeforeItsOffsetCommitIsReplayedByTheNext() throws Exception {
        String batchTopic = topic + "-batch";
        int messages = 5;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            for (int i = 0; i < messages; i++) {
                ProducerRecord<String, String> record = new ProducerRecord<>(batchTopic, "order-" + i, "batch order " + i);
                record.headers().add("idempotency-key", ("msg-batch-crash-" + i).getBytes(StandardCharsets.UTF_8));
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
        }
        TopicPartition partition = new TopicPartition(batchTopic, 0);

        child = ChildJvm.start(KafkaInboxCrashChild.class, KafkaInboxTestApp.COMMITTED, arguments());
        child.awaitLine(BOUND);
        child.kill();

        List<String> committedByChild = payloads();
        assertThat(committedByChild).as("the child's first run, committed with its message ids").isNotEmpty()
                .doesNotHaveDuplicates();
        assertThat(KAFKA.committedOffset(group, partition)).as("the child died before committing its offset").isNull();

        next = new SpringApplicationBuilder(KafkaInboxTestApp.class).web(WebApplicationType.NONE).run(arguments());
        MeterRegistry meters = next.getBean(MeterRegistry.class);
        await().atMost(BOUND).until(() -> Long.valueOf(messages).equals(KAFKA.committedOffset(group, partition)));
        assertThat(meters.get("retrysafe.requests").tags("source", "kafka", "outcome", "replayed").counter().count())
                .as("the child's records, skipped").isEqualTo(committedByChild.size());
        List<String> all = new ArrayList<>();
        for (int i = 0; i < messages; i++) {
            all.add("batch order " + i);
        }
        assertThat(payloads()).as("every booking once").containsExactlyElementsOf(all);
    }

    private List<String> payloads() {
        return jdbc.queryForList("SELECT payload FROM " + ledger + " ORDER BY id", String.class);
    }

    private String[] arguments() {
        List<String> args = new ArrayList<>();
        Map.of("spring.datasource.url", TestDatabases.postgresJdbcUrl(),
                "spring.datasource.username", TestDatabases.postgresUser(),
                "spring.datasource.password", TestDatabases.postgresPassword(),
                "spring.kafka.bootstrap-servers", KAFKA.bootstrapServers(),
                "spring.kafka.consumer.group-id", group,
                "retrysafe.kafka.enabled", "true",
                "retrysafe.store.table", records,
                "retrysafe.store.initialize-schema", "true",
                "test.ledger", ledger)
                .forEach((name, value) -> args.add("--" + name + "=" + value));
        args.add("--spring.kafka.consumer.auto-offset-reset=earliest");
        args.add("--spring.datasource.hikari.maximum-pool-size=4");
        args.add("--spring.datasource.hikari.minimum-idle=1");
        // A killed member is out of the group after 3 s rather than the default 45 s.
        args.add("--spring.kafka.consumer.properties.session.timeout.ms="
                + KafkaBroker.CLASSIC_SESSION_TIMEOUT.toMillis());
        args.add("--spring.kafka.consumer.heartbeat-interval=500ms");
        args.add("--test.topic.orders=" + topic);
        args.add("--test.topic.batch-orders=" + topic + "-batch");
        // The other listeners of the test application read topics of their own here.
        args.add("--test.topic.flaky=" + topic + "-unused-flaky");
        args.add("--test.topic.poison=" + topic + "-unused-poison");
        args.add("--spring.main.banner-mode=off");
        return args.toArray(new String[0]);
    }
}
