package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.PhaseCompleter;
import io.retrysafe.Phases;
import io.retrysafe.StepCodec;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * An {@link Idempotent} method that takes {@link Phases} against the real PostgreSQL: its steps commit one by one
 * with their saved values, a call that failed mid-way is driven to its end by the completer from the saved
 * arguments, and the caller's retry then gets that answer without the method running again.
 */
@SpringBootTest(classes = IdempotentPhasedMethodIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
@DirtiesContext
class IdempotentPhasedMethodIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    /** The application's own table: one row per step that ran, by order. */
    static final String STEPS = "rs_phased_method_steps_" + SUFFIX;
    static final String RECORDS = "rs_phased_method_records_" + SUFFIX;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        registry.add("retrysafe.phases.completer.idle-for", () -> "0s");
        registry.add("retrysafe.phases.completer.interval", () -> "1h");
    }

    @BeforeAll
    static void createTable() {
        new JdbcTemplate(TestDatabases.postgres()).execute("CREATE TABLE " + STEPS
                + " (order_number varchar(100) NOT NULL, step varchar(20) NOT NULL)");
    }

    @AfterAll
    static void dropTables() {
        JdbcTemplate jdbc = new JdbcTemplate(TestDatabases.postgres());
        jdbc.execute("DROP TABLE IF EXISTS " + STEPS);
        jdbc.execute("DROP TABLE IF EXISTS " + RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Probe probe() {
            return new Probe();
        }

        @Bean
        Checkout checkout(Probe probe) {
            return new Checkout(probe);
        }
    }

    /** What the test sees of the service and steers in it; apart from it, since the service is a proxy. */
    static class Probe {
        final AtomicInteger runs = new AtomicInteger();
        final AtomicInteger charges = new AtomicInteger();
        final AtomicBoolean providerDown = new AtomicBoolean(true);
    }

    public static class Checkout {
        private final Probe probe;

        Checkout(Probe probe) {
            this.probe = probe;
        }

        // Called outside any request, so with no caller: the order number is a key global by nature.
        @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED)
        public String pay(String orderNumber, long amountCents, Phases<Connection> phases) throws Exception {
            probe.runs.incrementAndGet();
            phases.local("reserve", StepCodec.none(), c -> step(c, orderNumber, "reserve"));
            if (probe.providerDown.get()) {
                throw new IllegalStateException("the provider is down");
            }
            String charge = phases.foreign("charge", StepCodec.utf8(), key -> {
                probe.charges.incrementAndGet();
                return "ch-" + key.substring(0, 8) + "-" + amountCents;
            });
            return phases.local("book", StepCodec.utf8(), c -> {
                step(c, orderNumber, "book");
                return "booked " + orderNumber + " " + charge;
            });
        }

        private static Void step(Connection c, String orderNumber, String step) throws Exception {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + STEPS + " VALUES (?, ?)")) {
                ps.setString(1, orderNumber);
                ps.setString(2, step);
                ps.executeUpdate();
            }
            return null;
        }
    }

    @Autowired
    Checkout checkout;

    @Autowired
    Probe probe;

    @Autowired
    RetrySafeCompleterScheduler completer;

    @Test
    void aCallThatFailedMidWayIsEndedByTheCompleterAndTheRetryGetsItsAnswer() throws Exception {
        probe.providerDown.set(true);
        String order = "order-" + UUID.randomUUID();
        assertThatThrownBy(() -> checkout.pay(order, 700, null)).hasMessageContaining("the provider is down");
        assertThat(steps(order, "reserve")).as("the reservation, committed by its own step").isEqualTo(1);

        probe.providerDown.set(false);
        PhaseCompleter.Run run = completer.runNow();

        assertThat(run.forwarded()).as("driven forward from the saved arguments: %s", run).isEqualTo(1);
        String retry = checkout.pay(order, 700, null);
        assertThat(retry).startsWith("booked " + order + " ch-").endsWith("-700");
        assertThat(probe.runs.get()).as("runs: the call and the completer's").isEqualTo(2);
        assertThat(probe.charges.get()).as("charges").isEqualTo(1);
        assertThat(steps(order, "reserve")).as("reservations").isEqualTo(1);
        assertThat(steps(order, "book")).as("bookings").isEqualTo(1);
        assertThatThrownBy(() -> checkout.pay(order, 900, null)).as("the same key with another amount")
                .isInstanceOf(io.retrysafe.FingerprintMismatchException.class);
    }

    @Test
    void aCallThatSucceedsRunsEachStepOnceAndIsReplayed() throws Exception {
        probe.providerDown.set(false);
        String order = "order-" + UUID.randomUUID();
        int before = probe.runs.get();

        String first = checkout.pay(order, 300, null);
        String again = checkout.pay(order, 300, null);

        assertThat(again).isEqualTo(first);
        assertThat(probe.runs.get() - before).as("runs").isEqualTo(1);
        assertThat(steps(order, "book")).isEqualTo(1);
    }

    private static int steps(String order, String step) {
        return new JdbcTemplate(TestDatabases.postgres()).queryForObject(
                "SELECT count(*) FROM " + STEPS + " WHERE order_number = ? AND step = ?", Integer.class, order, step);
    }
}
