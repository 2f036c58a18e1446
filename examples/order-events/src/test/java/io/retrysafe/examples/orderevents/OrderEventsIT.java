package io.retrysafe.examples.orderevents;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestNats;
import io.retrysafe.testservices.TestRabbit;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The example end to end, as a user runs it: against an in-process Kafka broker, the local NATS
 * server and the local RabbitMQ, on the real PostgreSQL. Every run publishes each order twice; a second run
 * with the same name publishes them all again, and books nothing more.
 */
class OrderEventsIT {
    private static final int ORDERS = 15;

    private final String run = "it-" + UUID.randomUUID().toString().substring(0, 8);

    /** The example's tables are shared by every run on this database; only this run's rows go. */
    @AfterEach
    void deleteThisRunsRows() throws SQLException {
        try (java.sql.Connection c = TestDatabases.postgres().getConnection(); Statement st = c.createStatement()) {
            st.executeUpdate("DELETE FROM " + OrderEvents.BOOKINGS + " WHERE order_id LIKE '" + run + "-%'");
            st.executeUpdate("DELETE FROM " + OrderEvents.INBOX_TABLE + " WHERE idem_key LIKE 'order-created:" + run
                    + "-%'");
        }
    }

    @Test
    void kafkaBooksEachOrderOnceAndASecondRunBooksNothing() throws Exception {
        // One broker per run (started by the example): the second run's topic is new, its ids are not.
        OrderEvents.Summary first = run("kafka");
        assertThat(first).isEqualTo(new OrderEvents.Summary(2 * ORDERS, ORDERS, ORDERS, ORDERS, ORDERS, cents()));

        OrderEvents.Summary second = run("kafka");
        assertThat(second).as("the same events again: all skipped, the table unchanged")
                .isEqualTo(new OrderEvents.Summary(2 * ORDERS, 0, 2 * ORDERS, ORDERS, ORDERS, cents()));
    }

    @Test
    void natsBooksEachOrderOnceAndASecondRunBooksNothing() throws Exception {
        String url = TestNats.url();
        try {
            runTwice("nats", "--nats-url=" + url);
        } finally {
            try (Connection nats = Nats.connect(url)) {
                nats.jetStreamManagement().deleteStream(run.toUpperCase().replace('-', '_') + "_ORDER_EVENTS");
            }
        }
    }

    @Test
    void rabbitmqBooksEachOrderOnceAndASecondRunBooksNothing() throws Exception {
        String url = TestRabbit.url();
        try {
            runTwice("rabbitmq", "--rabbitmq-url=" + url);
        } finally {
            try (com.rabbitmq.client.Connection rabbit = TestRabbit.connect("order-events-it-cleanup");
                    Channel channel = rabbit.createChannel()) {
                channel.queueDelete(run + ".order-events");
                channel.queueDelete(run + ".order-events.dlq");
            }
        }
    }

    /** A first run books every order; a second with the same name books nothing more. */
    private void runTwice(String broker, String... more) throws Exception {
        OrderEvents.Summary first = run(broker, more);
        assertThat(first).isEqualTo(new OrderEvents.Summary(2 * ORDERS, ORDERS, ORDERS, ORDERS, ORDERS, cents()));

        OrderEvents.Summary second = run(broker, more);
        assertThat(second).as("the same events again: all skipped, the table unchanged")
                .isEqualTo(new OrderEvents.Summary(2 * ORDERS, 0, 2 * ORDERS, ORDERS, ORDERS, cents()));
    }

    private OrderEvents.Summary run(String broker, String... more) throws Exception {
        String[] args = new String[5 + more.length];
        args[0] = broker;
        args[1] = "--run=" + run;
        args[2] = "--orders=" + ORDERS;
        args[3] = "--jdbc-url=" + TestDatabases.postgresJdbcUrl();
        args[4] = "--jdbc-user=" + TestDatabases.postgresUser();
        System.arraycopy(more, 0, args, 5, more.length);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        OrderEvents.Summary summary;
        try (PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8)) {
            summary = OrderEvents.run(withPassword(args), out);
        }
        String text = printed.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("Published " + ORDERS + " order events, each 2 times")
                .contains("Table order_booking: " + ORDERS + " rows for " + ORDERS + " orders");
        return summary;
    }

    private static String[] withPassword(String[] args) {
        String password = TestDatabases.postgresPassword();
        if (password == null || password.isEmpty()) {
            return args;
        }
        String[] all = java.util.Arrays.copyOf(args, args.length + 1);
        all[args.length] = "--jdbc-password=" + password;
        return all;
    }

    /** 1000 + 25 i cents for i = 1 … ORDERS. */
    private static long cents() {
        long total = 0;
        for (int i = 1; i <= ORDERS; i++) {
            total += 1000 + 25 * i;
        }
        return total;
    }
}
