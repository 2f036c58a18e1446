package io.retrysafe.spring.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRabbit;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A Spring AMQP consumer killed with SIGKILL between its database commit and its acknowledgement:
 * the broker returns the message when the connection closes, and the next application's inbox keeps
 * the listener from running twice.
 */
class RabbitInboxCrashIT {
    private static final Duration BOUND = Duration.ofSeconds(60);

    private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private final String ledger = "rs_spring_rabbit_crash_ledger_" + suffix;
    private final String records = "rs_spring_rabbit_crash_inbox_" + suffix;
    private final String queue = "rs-spring-crash-" + suffix;
    private JdbcTemplate jdbc;
    private ChildJvm child;
    private ConfigurableApplicationContext next;

    @BeforeEach
    void table() {
        jdbc = new JdbcTemplate(TestDatabases.postgres());
        jdbc.execute("CREATE TABLE " + ledger + " (id bigserial PRIMARY KEY, queue text NOT NULL, message_id text,"
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
            if (jdbc != null) {
                jdbc.execute("DROP TABLE IF EXISTS " + ledger);
                jdbc.execute("DROP TABLE IF EXISTS " + records);
            }
            try (var connection = TestRabbit.connect("retrysafe-spring-rabbit-crash-cleanup");
                    var channel = connection.createChannel()) {
                for (String name : List.of(queue, queue + ".dlq", queue + "-unused", queue + "-unused.dlq")) {
                    channel.queueDelete(name);
                }
            }
        }
    }

    @Test
    void aConsumerKilledAfterItsDatabaseCommitAndBeforeItsAckIsReplayedByTheNext() throws Exception {
        child = ChildJvm.start(RabbitInboxCrashChild.class, RabbitInboxTestApp.COMMITTED, arguments());
        // The child declares the queues at start; publish once it is there.
        await().atMost(BOUND).until(() -> queueExists(queue));
        publish("msg-crash", "book order 1");
        assertThat(child.awaitLine(BOUND)).as("the id the child committed").isEqualTo("msg-crash");
        child.kill();

        assertThat(payloads()).as("the child's booking, committed with its message id").containsExactly("book order 1");

        next = new SpringApplicationBuilder(RabbitInboxTestApp.class).web(WebApplicationType.NONE).run(arguments());
        RabbitTemplate rabbit = next.getBean(RabbitTemplate.class);
        // Behind the redelivered message: once it is booked, the one before it was handled.
        rabbit.send("", queue, MessageBuilder.withBody("book order 2".getBytes(StandardCharsets.UTF_8))
                .setMessageId("msg-after").build());
        await().atMost(BOUND).until(() -> payloads().contains("book order 2"));

        assertThat(next.getBean(RabbitInboxTestApp.Listeners.class).calls).as("the redelivery did not run the listener")
                .containsOnlyKeys("msg-after");
        assertThat(payloads()).as("the booking is there once").containsExactly("book order 1", "book order 2");
    }

    private void publish(String id, String body) throws Exception {
        try (var connection = TestRabbit.connect("retrysafe-spring-rabbit-crash-producer");
                var channel = connection.createChannel()) {
            channel.confirmSelect();
            channel.basicPublish("", queue, true, new com.rabbitmq.client.AMQP.BasicProperties.Builder()
                    .messageId(id).deliveryMode(2).build(), body.getBytes(StandardCharsets.UTF_8));
            channel.waitForConfirmsOrDie(BOUND.toMillis());
        }
    }

    private static boolean queueExists(String name) throws Exception {
        try (var connection = TestRabbit.connect("retrysafe-spring-rabbit-crash-probe");
                var channel = connection.createChannel()) {
            channel.queueDeclarePassive(name);
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private List<String> payloads() {
        return jdbc.queryForList("SELECT payload FROM " + ledger + " ORDER BY id", String.class);
    }

    private String[] arguments() {
        URI broker = URI.create(TestRabbit.url());
        String[] user = broker.getUserInfo().split(":", 2);
        List<String> args = new ArrayList<>();
        Map.of("spring.datasource.url", TestDatabases.postgresJdbcUrl(),
                "spring.datasource.username", TestDatabases.postgresUser(),
                "spring.datasource.password", TestDatabases.postgresPassword(),
                "spring.rabbitmq.host", broker.getHost(),
                "spring.rabbitmq.port", Integer.toString(broker.getPort()),
                "spring.rabbitmq.username", user[0],
                "spring.rabbitmq.password", user[1],
                "retrysafe.rabbit.enabled", "true",
                "retrysafe.rabbit.consumer-name", "booking",
                "retrysafe.store.table", records)
                .forEach((name, value) -> args.add("--" + name + "=" + value));
        args.add("--retrysafe.store.initialize-schema=true");
        args.add("--test.ledger=" + ledger);
        args.add("--test.queue.orders=" + queue);
        // The other listener of the test application reads a queue of its own here.
        args.add("--test.queue.poison=" + queue + "-unused");
        args.add("--spring.datasource.hikari.maximum-pool-size=4");
        args.add("--spring.datasource.hikari.minimum-idle=1");
        args.add("--spring.main.banner-mode=off");
        return args.toArray(new String[0]);
    }
}
