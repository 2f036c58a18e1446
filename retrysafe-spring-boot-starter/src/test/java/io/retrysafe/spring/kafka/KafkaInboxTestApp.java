package io.retrysafe.spring.kafka;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.backoff.FixedBackOff;

/**
 * An application as a user writes it (every listener in the group of {@code spring.kafka.consumer.group-id}): {@code @KafkaListener} record listeners writing with a
 * {@code JdbcTemplate}, Boot's auto-configured container factory, a {@code DefaultErrorHandler} with a
 * dead-letter recoverer, and {@code retrysafe.kafka.enabled=true} (set by the tests, and
 * {@code retrysafe.kafka.dead-letters} where a test depends on it). The ledger table has no unique
 * index: a message handled twice shows as two rows.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class KafkaInboxTestApp {
    /** Printed by the crash child's listener once its transaction has committed. */
    public static final String COMMITTED = "COMMITTED";
    /** Attempts of a failing record: the first and {@value #RETRIES} retries. */
    static final int RETRIES = 3;

    /**
     * What every test of the application sets: the shared PostgreSQL with a small pool, the broker,
     * the group, the inbox on its own records table, the ledger.
     */
    static void properties(DynamicPropertyRegistry registry, KafkaBroker kafka, String group, String records,
            String ledger) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        // The shared server's connections are few.
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> 5);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
        registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
        registry.add("spring.kafka.consumer.group-id", () -> group);
        registry.add("spring.kafka.consumer.auto-offset-reset", () -> "earliest");
        registry.add("retrysafe.kafka.enabled", () -> true);
        registry.add("retrysafe.store.table", () -> records);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        registry.add("test.ledger", () -> ledger);
        registry.add("test.topic.batch-orders", () -> "unused-batch-orders-" + records);
    }

    /** Everything on {@code topic} now, its keys and values as text. */
    static List<ConsumerRecord<String, String>> readAll(KafkaBroker kafka, String topic, Duration bound)
            throws Exception {
        return kafka.readAll(topic, bound).stream().map(r -> new ConsumerRecord<>(r.topic(), r.partition(),
                r.offset(), r.timestamp(), r.timestampType(), r.serializedKeySize(), r.serializedValueSize(),
                r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8),
                r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8), r.headers(),
                r.leaderEpoch())).toList();
    }

    /** Each topic with its dead-letter topic, and the ledger: no unique index, so a message handled twice shows. */
    static void topicsAndLedger(KafkaBroker kafka, List<String> topics, int partitions, String ledger)
            throws Exception {
        for (String topic : topics) {
            kafka.createTopic(topic, partitions);
            kafka.createTopic(topic + ".DLT", partitions);
        }
        new JdbcTemplate(TestDatabases.postgres()).execute("CREATE TABLE " + ledger + " (id bigserial PRIMARY KEY,"
                + " topic text NOT NULL, message_id text, payload text)");
    }

    static void dropTables(String... tables) {
        JdbcTemplate jdbc = new JdbcTemplate(TestDatabases.postgres());
        for (String table : tables) {
            jdbc.execute("DROP TABLE IF EXISTS " + table);
        }
    }

    @Bean
    MeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }

    /** Publishes to {@code <topic>.DLT}, same partition; a bean, as Spring Kafka's documentation declares it. */
    @Bean
    DeadLetterPublishingRecoverer kafkaDeadLetterRecoverer(KafkaTemplate<?, ?> template) {
        return new DeadLetterPublishingRecoverer(template,
                (record, e) -> new TopicPartition(record.topic() + ".DLT", record.partition()));
    }

    /** Retries three times, 50 ms apart, then to the recoverer. */
    @Bean
    DefaultErrorHandler kafkaErrorHandler(DeadLetterPublishingRecoverer recoverer) {
        return new DefaultErrorHandler(recoverer, new FixedBackOff(50, RETRIES));
    }

    @Bean
    Listeners listeners(JdbcTemplate jdbc, DataSource dataSource, @Value("${test.ledger}") String ledger,
            @Value("${test.crash-after-commit:false}") boolean crashAfterCommit) {
        return new Listeners(jdbc, dataSource, ledger, crashAfterCommit);
    }

    /** The application's listeners. */
    public static final class Listeners {
        private static final CountDownLatch NEVER = new CountDownLatch(1);

        private final JdbcTemplate jdbc;
        private final DataSource dataSource;
        private final String ledger;
        private final boolean crashAfterCommit;
        /** Listener calls per message id, failed ones included. */
        final Map<String, Integer> calls = new ConcurrentHashMap<>();
        /** For each failing call of {@link #flaky}: rows of its id that another connection saw at that moment. */
        final List<Integer> rowsSeenFromOutsideWhenFailing = new CopyOnWriteArrayList<>();

        Listeners(JdbcTemplate jdbc, DataSource dataSource, String ledger, boolean crashAfterCommit) {
            this.jdbc = jdbc;
            this.dataSource = dataSource;
            this.ledger = ledger;
            this.crashAfterCommit = crashAfterCommit;
        }

        @KafkaListener(id = "orders", idIsGroup = false, topics = "${test.topic.orders}")
        public void orders(ConsumerRecord<String, String> record) {
            book(record);
            holdAfterCommit(header(record, "idempotency-key"));
        }

        /** The same bookings from a batch listener; with crash-after-commit it holds after its first run. */
        @KafkaListener(id = "batch-orders", idIsGroup = false, topics = "${test.topic.batch-orders}", batch = "true")
        public void batchOrders(List<ConsumerRecord<String, String>> records) {
            records.forEach(this::book);
            holdAfterCommit(records.size() + " records");
        }

        private void holdAfterCommit(String what) {
            if (crashAfterCommit) {
                // After the database commit, before the call returns to the container (and its offset commit).
                TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                    @Override
                    public void afterCommit() {
                        System.out.println(COMMITTED + " " + what);
                        System.out.flush();
                        try {
                            NEVER.await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        Runtime.getRuntime().halt(4);
                    }
                });
            }
        }

        /** Writes, then fails on the first two calls of each message. */
        @KafkaListener(id = "flaky", idIsGroup = false, topics = "${test.topic.flaky}")
        public void flaky(ConsumerRecord<String, String> record) throws SQLException {
            book(record);
            String id = header(record, "idempotency-key");
            if (calls.get(id) <= 2) {
                rowsSeenFromOutsideWhenFailing.add(rowsFromAnotherConnection(id));
                throw new IllegalStateException("the warehouse is not answering (call " + calls.get(id) + ")");
            }
        }

        /** Writes, then always fails. */
        @KafkaListener(id = "poison", idIsGroup = false, topics = "${test.topic.poison}")
        public void poison(ConsumerRecord<String, String> record) {
            book(record);
            throw new IllegalStateException("cannot book " + record.value());
        }

        private void book(ConsumerRecord<String, String> record) {
            calls.merge(String.valueOf(header(record, "idempotency-key")), 1, Integer::sum);
            jdbc.update("INSERT INTO " + ledger + " (topic, message_id, payload) VALUES (?, ?, ?)", record.topic(),
                    header(record, "idempotency-key"), record.value());
        }

        private int rowsFromAnotherConnection(String id) throws SQLException {
            try (Connection c = dataSource.getConnection();
                    PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + ledger + " WHERE message_id = ?")) {
                ps.setString(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getInt(1);
                }
            }
        }

        static String header(ConsumerRecord<?, ?> record, String name) {
            Header header = record.headers().lastHeader(name);
            return header == null || header.value() == null ? null
                    : new String(header.value(), StandardCharsets.UTF_8);
        }
    }
}
