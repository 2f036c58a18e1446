package io.retrysafe.spring.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.rabbitmq.RabbitInbox;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRabbit;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code retrysafe.rabbit.enabled=true} in a Spring Boot application with {@code @RabbitListener}s,
 * against the shared RabbitMQ and the real PostgreSQL: what the listener's table holds, how often the
 * listener ran, what reached the dead-letter queue.
 */
@SpringBootTest(classes = RabbitInboxTestApp.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class RabbitInboxIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private static final String LEDGER = "rs_spring_rabbit_ledger_" + SUFFIX;
    private static final String RECORDS = "rs_spring_rabbit_inbox_" + SUFFIX;
    private static final String ORDERS = "rs-spring-orders-" + SUFFIX;
    private static final String POISON = "rs-spring-poison-" + SUFFIX;
    private static final String CONSUMER = "booking";
    private static final Duration BOUND = Duration.ofSeconds(60);

    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    RabbitTemplate rabbit;
    @Autowired
    RabbitInboxTestApp.Listeners listeners;
    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        URI broker = URI.create(TestRabbit.url());
        String[] user = broker.getUserInfo().split(":", 2);
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> 4);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
        registry.add("spring.rabbitmq.host", broker::getHost);
        registry.add("spring.rabbitmq.port", broker::getPort);
        registry.add("spring.rabbitmq.username", () -> user[0]);
        registry.add("spring.rabbitmq.password", () -> user[1]);
        registry.add("retrysafe.rabbit.enabled", () -> true);
        registry.add("retrysafe.rabbit.consumer-name", () -> CONSUMER);
        registry.add("retrysafe.rabbit.backoff", () -> "10ms");
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        registry.add("test.ledger", () -> LEDGER);
        registry.add("test.queue.orders", () -> ORDERS);
        registry.add("test.queue.poison", () -> POISON);
    }

    @BeforeAll
    static void table() {
        new JdbcTemplate(TestDatabases.postgres()).execute("CREATE TABLE " + LEDGER + " (id bigserial PRIMARY KEY,"
                + " queue text NOT NULL, message_id text, payload text)");
    }

    @AfterAll
    static void dropTablesAndQueues() throws Exception {
        JdbcTemplate jdbc = new JdbcTemplate(TestDatabases.postgres());
        jdbc.execute("DROP TABLE IF EXISTS " + LEDGER);
        jdbc.execute("DROP TABLE IF EXISTS " + RECORDS);
        try (var connection = TestRabbit.connect("retrysafe-spring-rabbit-it-cleanup");
                var channel = connection.createChannel()) {
            for (String queue : List.of(ORDERS, ORDERS + ".dlq", POISON, POISON + ".dlq")) {
                channel.queueDelete(queue);
            }
        }
    }

    @Test
    void everyMessageDeliveredTwiceTakesEffectOnceAndTheListenersWritesCommitWithItsId() throws SQLException {
        List<String> ids = List.of("order-1", "order-2", "order-3", "order-4", "order-5");
        for (int copy = 0; copy < 2; copy++) {
            for (String id : ids) {
                rabbit.send("", ORDERS, message(id, "book " + id));
            }
        }
        // One consumer takes the queue in order: once the last message is booked, every copy before it was seen.
        rabbit.send("", ORDERS, message("order-last", "book last"));
        await().atMost(BOUND).until(() -> ledger(ORDERS).contains("order-last book last"));

        assertThat(ledger(ORDERS)).containsExactlyElementsOf(
                Stream.concat(ids.stream().map(id -> id + " book " + id), Stream.of("order-last book last")).toList());
        assertThat(ids).allSatisfy(id -> assertThat(listeners.calls.get(id)).as("the second copy was replayed")
                .isEqualTo(1));
        assertThat(inboxRows()).isEqualTo(ids.size() + 1);
        assertThat(meters.get("retrysafe.requests").tags("source", "rabbitmq", "outcome", "replayed").counter()
                .count()).as("the second copies, counted as RabbitMQ's").isEqualTo(ids.size());
        assertThat(meters.find("retrysafe.requests").tag("source", "http").counters())
                .as("no message counted as an HTTP request").allSatisfy(c -> assertThat(c.count()).isZero());
    }

    @Test
    void aListenerFailingOnEveryAttemptIsDeadLetteredAndLeavesNoWrite() throws SQLException {
        rabbit.send("", POISON, message("poison-1", "crate 7"));
        Message dead = rabbit.receive(POISON + ".dlq", BOUND.toMillis());

        assertThat(dead).isNotNull();
        assertThat(new String(dead.getBody(), StandardCharsets.UTF_8)).isEqualTo("crate 7");
        Map<String, Object> headers = dead.getMessageProperties().getHeaders();
        assertThat(headers.get(DeadLetterHeaders.REASON)).hasToString("handler-failed");
        assertThat(headers.get(DeadLetterHeaders.ATTEMPTS)).hasToString("3");
        assertThat(headers.get(DeadLetterHeaders.SCOPE)).hasToString(RabbitInbox.scope(CONSUMER, POISON));
        assertThat(headers.get(DeadLetterHeaders.ERROR))
                .hasToString("java.lang.IllegalStateException: the warehouse refuses crate 7");
        assertThat(listeners.calls.get("poison-1")).as("runs: the inbox's max-attempts").isEqualTo(3);
        assertThat(ledger(POISON)).as("each run's write rolled back").isEmpty();
    }

    @Test
    void aMessageWithoutAnIdIsDeadLetteredWithoutRunningTheListener() {
        rabbit.send("", ORDERS, MessageBuilder.withBody("anonymous".getBytes(StandardCharsets.UTF_8)).build());
        Message dead = rabbit.receive(ORDERS + ".dlq", BOUND.toMillis());

        assertThat(dead).isNotNull();
        assertThat(dead.getMessageProperties().getHeaders().get(DeadLetterHeaders.REASON))
                .hasToString("missing-message-id");
        assertThat(listeners.calls).doesNotContainKey("anonymous");
    }

    private static Message message(String id, String body) {
        return MessageBuilder.withBody(body.getBytes(StandardCharsets.UTF_8)).setMessageId(id).build();
    }

    private List<String> ledger(String queue) {
        return jdbc.queryForList("SELECT message_id || ' ' || payload FROM " + LEDGER + " WHERE queue = ? ORDER BY id",
                String.class, queue);
    }

    private int inboxRows() {
        Integer rows = jdbc.queryForObject("SELECT count(*) FROM " + RECORDS + " WHERE scope = ?", Integer.class,
                RabbitInbox.scope(CONSUMER, ORDERS));
        return rows == null ? 0 : rows;
    }
}
