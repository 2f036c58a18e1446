package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.testservices.KafkaBroker;
import io.retrysafe.testservices.TcpProxy;
import io.retrysafe.testservices.TestDatabases;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code retrysafe.kafka.enabled=true} with the inbox dead-lettering (the default) and no error handler
 * of the application's, while its database cannot be reached: the application's connections go through
 * a proxy the test cuts for longer than Spring Kafka's default error handler tries a record (ten times,
 * then it logs and skips it). The record must wait for the database, not be skipped, and take effect
 * once when it is back.
 */
@SpringBootTest(classes = KafkaDatabaseOutageIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class KafkaDatabaseOutageIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private static final String LEDGER = "rs_spring_kafka_outage_ledger_" + SUFFIX;
    private static final String RECORDS = "rs_spring_kafka_outage_inbox_" + SUFFIX;
    private static final String ORDERS = "outage-orders-" + SUFFIX;
    private static final String GROUP = "outage-" + SUFFIX;
    /** Failed tries while the database is cut: more than the ten after which Spring Kafka's default skips. */
    private static final int TRIES_DURING_OUTAGE = 15;
    private static final Duration BOUND = Duration.ofSeconds(60);

    private static TcpProxy database;

    /** An application with a record listener, Boot's container factory and no error handler of its own. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Ledger ledger(JdbcTemplate jdbc) {
            return new Ledger(jdbc);
        }

        /** Counts the inbox's answers "the database failed, later". */
        @Bean
        Outages outages() {
            return new Outages();
        }
    }

    static final class Outages implements InboxListener {
        final AtomicInteger storeUnavailable = new AtomicInteger();

        @Override
        public void onResult(Delivery delivery, InboxResult result) {
            if (result instanceof InboxResult.RetryLater later && later.reason() == RetryReason.STORE_UNAVAILABLE) {
                storeUnavailable.incrementAndGet();
            }
        }
    }

    public static final class Ledger {
        private final JdbcTemplate jdbc;
        /** Listener calls per message id. */
        final Map<String, Integer> calls = new ConcurrentHashMap<>();

        Ledger(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @KafkaListener(id = "outage-orders", idIsGroup = false, topics = "${test.topic.orders}")
        public void orders(ConsumerRecord<String, String> record) {
            String id = new String(record.headers().lastHeader("idempotency-key").value(), StandardCharsets.UTF_8);
            calls.merge(id, 1, Integer::sum);
            jdbc.update("INSERT INTO " + LEDGER + " (message_id, payload) VALUES (?, ?)", id, record.value());
        }
    }

    @Autowired
    Ledger ledger;
    @Autowired
    Outages outages;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", KafkaDatabaseOutageIT::urlThroughProxy);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> 2);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
        // Each try while the database is cut fails within a quarter of a second (Hikari's least).
        registry.add("spring.datasource.hikari.connection-timeout", () -> "250");
        registry.add("spring.datasource.hikari.validation-timeout", () -> "250");
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("spring.kafka.consumer.group-id", () -> GROUP);
        registry.add("spring.kafka.consumer.auto-offset-reset", () -> "earliest");
        registry.add("retrysafe.kafka.enabled", () -> true);
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        registry.add("retrysafe.policy.retry-after", () -> "100ms");
        registry.add("test.topic.orders", () -> ORDERS);
    }

    @BeforeAll
    static void topicTableAndProxy() throws Exception {
        KAFKA.createTopic(ORDERS, 1);
        KAFKA.createTopic(ORDERS + ".DLT", 1);
        new JdbcTemplate(TestDatabases.postgres()).execute("CREATE TABLE " + LEDGER + " (id bigserial PRIMARY KEY,"
                + " message_id text, payload text)");
        database = new TcpProxy(URI.create(TestDatabases.postgresJdbcUrl().substring("jdbc:".length())).getPort());
    }

    @AfterAll
    static void dropTablesAndProxy() {
        if (database != null) {
            database.close();
        }
        KafkaInboxTestApp.dropTables(LEDGER, RECORDS);
    }

    @Test
    void aRecordWaitsOutTheDatabaseOutageAndTakesEffectOnce() throws Exception {
        String id = "msg-outage-" + SUFFIX;
        database.cut();
        try {
            try (KafkaProducer<String, String> producer = KAFKA.producer()) {
                ProducerRecord<String, String> record = new ProducerRecord<>(ORDERS, "order-1", "book order 1");
                record.headers().add("idempotency-key", id.getBytes(StandardCharsets.UTF_8));
                producer.send(record).get(30, TimeUnit.SECONDS);
            }
            await().atMost(BOUND).until(() -> outages.storeUnavailable.get() >= TRIES_DURING_OUTAGE);
            assertThat(ledger.calls).as("nothing ran without the database").isEmpty();
        } finally {
            database.restore();
        }

        await().atMost(BOUND).until(() -> rows(id) > 0 && committed() == 1);
        assertThat(rows(id)).as("taken again once the database was back, not skipped").isEqualTo(1);
        assertThat(ledger.calls.get(id)).as("listener calls").isEqualTo(1);
        assertThat(KafkaInboxTestApp.readAll(KAFKA, ORDERS + ".DLT", Duration.ofSeconds(1))).as("not dead-lettered")
                .isEmpty();
    }

    /** The application's URL to the test's PostgreSQL, with the proxy's port. */
    private static String urlThroughProxy() {
        String url = TestDatabases.postgresJdbcUrl();
        URI direct = URI.create(url.substring("jdbc:".length()));
        return url.replaceFirst("//" + direct.getHost() + ":" + direct.getPort() + "/",
                "//" + direct.getHost() + ":" + database.port() + "/");
    }

    private static int rows(String id) {
        return new JdbcTemplate(TestDatabases.postgres()).queryForObject("SELECT count(*) FROM " + LEDGER
                + " WHERE message_id = ?", Integer.class, id);
    }

    private static long committed() throws Exception {
        Long offset = KAFKA.committedOffset(GROUP, new TopicPartition(ORDERS, 0));
        return offset == null ? 0 : offset;
    }
}
