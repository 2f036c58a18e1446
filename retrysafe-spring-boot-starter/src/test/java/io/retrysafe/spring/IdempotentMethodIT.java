package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.internal.Engines;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
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
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link Idempotent} on a Spring service against the real PostgreSQL, with the starter as an
 * application gets it ({@code @EnableAutoConfiguration}, a DataSource from {@code spring.datasource.*}):
 * what the caller gets back, how often the method body ran, and which rows exist afterwards.
 */
@SpringBootTest(classes = IdempotentMethodIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class IdempotentMethodIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    /** The application's own table. No unique constraint on purpose: a second run shows as a second row. */
    static final String ORDERS = "rs_method_orders_" + SUFFIX;
    static final String RECORDS = "rs_method_records_" + SUFFIX;
    private static final String SCOPE = IdempotentMethod.SHARED_PREFIX + Orders.class.getName() + ".place";
    private static final String UNTRANSACTIONAL_SCOPE = IdempotentMethod.SHARED_PREFIX + Orders.class.getName()
            + ".placeWithoutTransactional";
    private static final int THREADS = 16;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        // Room for every caller, so that a duplicate holding a connection while it waits would show.
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> THREADS + 4);
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        // Generous: the race below holds 15 duplicates on the key until all of them are waiting.
        registry.add("retrysafe.store.lock-timeout", () -> "30s");
        // ... and all of them may wait on it (by default only half the pool may).
        registry.add("retrysafe.store.max-waiting-claims", () -> THREADS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Probe probe() {
            return new Probe();
        }

        @Bean
        Orders orders(JdbcTemplate jdbc, Probe probe) {
            return new Orders(jdbc, probe);
        }

        @Bean
        SimpleMeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    /** What {@link Orders#place} returns; stored as JSON and read back as this record. */
    public record Receipt(String orderNumber, long amountCents, int run) {
    }

    /** What the test sees of the service and steers in it; apart from it, since the service is a proxy. */
    static class Probe {
        final AtomicInteger runs = new AtomicInteger();
        /** Called inside the body, after its write. */
        final AtomicReference<Runnable> whileRunning = new AtomicReference<>(() -> { });
        /** Thrown once by the next run, after its write. */
        final AtomicReference<RuntimeException> failNext = new AtomicReference<>();
    }

    public static class Orders {
        private final JdbcTemplate jdbc;
        private final Probe probe;

        Orders(JdbcTemplate jdbc, Probe probe) {
            this.jdbc = jdbc;
            this.probe = probe;
        }

        // Called outside any request, so with no caller: the order number is a key global by nature.
        @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED)
        @Transactional
        public Receipt place(String orderNumber, long amountCents) {
            return body(orderNumber, amountCents);
        }

        @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED)
        public Receipt placeWithoutTransactional(String orderNumber, long amountCents) {
            return body(orderNumber, amountCents);
        }

        private Receipt body(String orderNumber, long amountCents) {
            int run = probe.runs.incrementAndGet();
            jdbc.update("INSERT INTO " + ORDERS + " (order_number, amount_cents) VALUES (?, ?)", orderNumber,
                    amountCents);
            probe.whileRunning.get().run();
            RuntimeException failure = probe.failNext.getAndSet(null);
            if (failure != null) {
                throw failure;
            }
            return new Receipt(orderNumber, amountCents, run);
        }
    }

    @Autowired
    Orders orders;
    @Autowired
    Probe probe;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    PlatformTransactionManager transactionManager;
    @Autowired
    TransactionalRetrySafe transactional;
    @Autowired
    MeterRegistry meters;
    @Autowired
    javax.sql.DataSource dataSource;

    private String orderNumber;
    private int runsBefore;

    @BeforeAll
    static void createOrdersTable() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + ORDERS + " (order_number varchar(64) NOT NULL, amount_cents bigint NOT NULL)");
        }
    }

    @AfterAll
    static void dropTables() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + ORDERS);
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @BeforeEach
    void newOrder() {
        orderNumber = "order-" + UUID.randomUUID();
        runsBefore = probe.runs.get();
    }

    @AfterEach
    void reset() {
        probe.whileRunning.set(() -> { });
        probe.failNext.set(null);
    }

    @Test
    void theStarterRunsTheMethodInTransactionalMode() {
        assertThat(transactional.engine().store().name()).contains(RECORDS);
    }

    @Test
    void firstCallRunsAndRetryReturnsTheStoredResultWithoutRunning() {
        Receipt first = orders.place(orderNumber, 1999);

        assertThat(first).isEqualTo(new Receipt(orderNumber, 1999, runsBefore + 1));
        assertThat(runs()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
        assertThat(status(SCOPE)).isEqualTo("COMPLETED");

        Receipt retry = orders.place(orderNumber, 1999);

        assertThat(retry).isEqualTo(first).isNotSameAs(first);
        assertThat(runs()).as("the retry did not run the method").isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void keyAndWritesCommitInOneTransaction() {
        orders.place(orderNumber, 500);

        assertThat(keyXmin(SCOPE)).as("the key's row and the order's row were written by one transaction")
                .isEqualTo(orderXmin());
    }

    @Test
    void sameKeyWithOtherArgumentsIsRefusedWithoutRunning() {
        Receipt first = orders.place(orderNumber, 1999);

        assertThatThrownBy(() -> orders.place(orderNumber, 2999)).isInstanceOf(FingerprintMismatchException.class);

        assertThat(runs()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
        assertThat(orders.place(orderNumber, 1999)).as("the original intent still replays").isEqualTo(first);
    }

    @Test
    void aMethodThatThrowsStoresNothingAndItsRetryRuns() {
        IllegalStateException declined = new IllegalStateException("payment declined");
        probe.failNext.set(declined);

        assertThatThrownBy(() -> orders.place(orderNumber, 1999)).isSameAs(declined);

        assertThat(rows()).as("the method's write was rolled back").isZero();
        assertThat(status(SCOPE)).as("no key was kept").isNull();

        Receipt retry = orders.place(orderNumber, 1999);

        assertThat(retry.run()).isEqualTo(runsBefore + 2);
        assertThat(runs()).isEqualTo(2);
        assertThat(rows()).isEqualTo(1);
        assertThat(status(SCOPE)).isEqualTo("COMPLETED");
    }

    @Test
    void insideAnOuterTransactionThatRollsBackNothingIsKept() {
        double storedBefore = completions("stored");
        double releasedBefore = completions("released");
        new TransactionTemplate(transactionManager).executeWithoutResult(tx -> {
            assertThat(orders.place(orderNumber, 1999).run()).isEqualTo(runsBefore + 1);
            tx.setRollbackOnly();
        });

        assertThat(rows()).isZero();
        assertThat(status(SCOPE)).isNull();
        assertThat(completions("stored")).as("the metrics count no stored result that was rolled back")
                .isEqualTo(storedBefore);
        assertThat(completions("released")).isEqualTo(releasedBefore + 1);

        orders.place(orderNumber, 1999);
        assertThat(runs()).as("with no key kept, the retry runs").isEqualTo(2);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void insideAnOuterTransactionTheKeyCommitsWithTheCallersWrites() {
        String other = orderNumber + "-outer";
        double storedBefore = completions("stored");
        Receipt first = new TransactionTemplate(transactionManager).execute(tx -> {
            jdbc.update("INSERT INTO " + ORDERS + " (order_number, amount_cents) VALUES (?, ?)", other, 1);
            Receipt placed = orders.place(orderNumber, 1999);
            assertThat(completions("stored")).as("not counted before the caller's transaction commits")
                    .isEqualTo(storedBefore);
            return placed;
        });

        assertThat(keyXmin(SCOPE)).isEqualTo(orderXmin()).isEqualTo(xminOf(other));
        assertThat(completions("stored")).isEqualTo(storedBefore + 1);

        // A replay inside a caller's transaction leaves that transaction usable.
        Receipt replayed = new TransactionTemplate(transactionManager).execute(tx -> {
            Receipt r = orders.place(orderNumber, 1999);
            jdbc.update("INSERT INTO " + ORDERS + " (order_number, amount_cents) VALUES (?, ?)", other, 2);
            return r;
        });
        assertThat(replayed).isEqualTo(first);
        assertThat(runs()).isEqualTo(1);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + ORDERS + " WHERE order_number = ?", Integer.class,
                other)).isEqualTo(2);
    }

    @Test
    void aFailureSwallowedByTheCallerDoesNotCommitTheKeyWithTheCallersTransaction() {
        // The method has no @Transactional of its own to mark the caller's transaction: the key
        // claimed inside it must not commit as in progress (retries would get 409, then run again).
        probe.failNext.set(new IllegalStateException("payment declined"));

        assertThatThrownBy(() -> new TransactionTemplate(transactionManager).executeWithoutResult(tx -> {
            assertThatThrownBy(() -> orders.placeWithoutTransactional(orderNumber, 1999))
                    .hasMessage("payment declined");
        })).isInstanceOf(UnexpectedRollbackException.class);

        assertThat(status(UNTRANSACTIONAL_SCOPE)).isNull();
        assertThat(rows()).isZero();
        assertThat(orders.placeWithoutTransactional(orderNumber, 1999).run()).isEqualTo(runsBefore + 2);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void concurrentCallsWithOneKeyRunTheMethodOnceAndTheirDuplicatesWaitWithoutAConnection() throws Exception {
        // The first caller to claim the key holds it until every other caller is waiting on it, in memory: the one
        // connection in use is the first caller's, and no claim waits on the key's row.
        AtomicInteger activeWhileWaiting = new AtomicInteger(-1);
        AtomicInteger onTheRowWhileWaiting = new AtomicInteger(-1);
        probe.whileRunning.set(() -> {
            await().atMost(Duration.ofSeconds(25)).until(() -> Engines.inFlight(transactional.engine()).waiting()
                    == THREADS - 1);
            activeWhileWaiting.set(((HikariDataSource) dataSource).getHikariPoolMXBean().getActiveConnections());
            onTheRowWhileWaiting.set(claimsWaitingOnALock());
        });
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Receipt>> calls = new ArrayList<>();
            for (int i = 0; i < THREADS; i++) {
                calls.add(pool.submit(() -> {
                    start.await();
                    return orders.place(orderNumber, 1999);
                }));
            }
            start.countDown();
            List<Receipt> receipts = new ArrayList<>();
            for (Future<Receipt> call : calls) {
                receipts.add(call.get(60, TimeUnit.SECONDS));
            }

            assertThat(runs()).isEqualTo(1);
            assertThat(rows()).isEqualTo(1);
            assertThat(receipts).hasSize(THREADS).containsOnly(new Receipt(orderNumber, 1999, runsBefore + 1));
            assertThat(activeWhileWaiting.get()).as("connections in use while the duplicates wait").isEqualTo(1);
            assertThat(onTheRowWhileWaiting.get()).as("claims waiting on the key's row").isZero();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void withoutAnyTransactionTheKeyAndTheWritesCommitTogether() {
        assertThat(org.springframework.transaction.support.TransactionSynchronizationManager
                .isActualTransactionActive()).isFalse();

        Receipt first = orders.placeWithoutTransactional(orderNumber, 700);

        assertThat(rows()).isEqualTo(1);
        assertThat(status(UNTRANSACTIONAL_SCOPE)).isEqualTo("COMPLETED");
        assertThat(keyXmin(UNTRANSACTIONAL_SCOPE)).isEqualTo(orderXmin());
        assertThat(orders.placeWithoutTransactional(orderNumber, 700)).isEqualTo(first);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void withoutAnyTransactionAMethodThatThrowsLeavesNoWriteAndNoKey() {
        probe.failNext.set(new IllegalArgumentException("no such product"));

        assertThatThrownBy(() -> orders.placeWithoutTransactional(orderNumber, 700))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("no such product");

        assertThat(rows()).isZero();
        assertThat(status(UNTRANSACTIONAL_SCOPE)).isNull();
        orders.placeWithoutTransactional(orderNumber, 700);
        assertThat(runs()).isEqualTo(2);
        assertThat(rows()).isEqualTo(1);
    }

    private int runs() {
        return probe.runs.get() - runsBefore;
    }

    private int rows() {
        return jdbc.queryForObject("SELECT count(*) FROM " + ORDERS + " WHERE order_number = ?", Integer.class,
                orderNumber);
    }

    /** The key's status, or null when there is no record of it. */
    private String status(String scope) {
        List<String> statuses = jdbc.queryForList("SELECT status FROM " + RECORDS + " WHERE scope = ? AND idem_key = ?",
                String.class, scope, orderNumber);
        return statuses.isEmpty() ? null : statuses.get(0);
    }

    private String keyXmin(String scope) {
        return jdbc.queryForObject("SELECT xmin::text FROM " + RECORDS + " WHERE scope = ? AND idem_key = ?",
                String.class, scope, orderNumber);
    }

    private String orderXmin() {
        return xminOf(orderNumber);
    }

    private String xminOf(String order) {
        return jdbc.queryForList("SELECT xmin::text FROM " + ORDERS + " WHERE order_number = ?", String.class, order)
                .get(0);
    }

    /** Sessions whose claim on this test's records table is blocked on another transaction's lock. */
    private int claimsWaitingOnALock() {
        return jdbc.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                + " AND position(? in query) > 0", Integer.class, RECORDS);
    }

    private double completions(String completion) {
        return meters.find(MicrometerRetrySafeListener.COMPLETIONS).tag("completion", completion).counters().stream()
                .mapToDouble(Counter::count).sum();
    }
}
