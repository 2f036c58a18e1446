package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
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
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transactional mode with the application's transactions at each of PostgreSQL's isolation levels. Under
 * REPEATABLE READ and SERIALIZABLE a duplicate that waited for the first request's transaction finds a
 * record written after its snapshot, and PostgreSQL refuses its claim with a serialization failure: where
 * RetrySafe began the transaction the claim runs again in a new one, and where the application's
 * transaction joined it, the duplicate is told the key is in progress.
 */
class PostgresIsolationIT {
    private static final String TABLE = "rs_pg_isolation_it";
    private static DataSource ds;
    private static TransactionalRetrySafe tx;
    private static ExecutorService pool;

    private final Fingerprint fp = Fingerprint.sha256("pay 100".getBytes(StandardCharsets.UTF_8));
    private String scope;

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.postgres();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(20))
                .build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_pg_isolation_payment (id uuid PRIMARY KEY, scope text NOT NULL)");
        }
        tx = TransactionalRetrySafe.of(RetrySafe.builder(store).build());
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @BeforeEach
    void newScope() {
        scope = "iso-" + UUID.randomUUID();
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ,
            Connection.TRANSACTION_SERIALIZABLE})
    void concurrentDuplicatesMakeOnePaymentAndEachGetsItsAnswer(int isolation) throws Exception {
        IdempotencyKey key = IdempotencyKey.of(scope, "storm");
        int threads = 16;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Outcome<String>>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            futures.add(pool.submit(() -> {
                try (Connection c = ds.getConnection()) {
                    c.setTransactionIsolation(isolation);
                    assertThat(start.await(10, TimeUnit.SECONDS)).isTrue();
                    return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c));
                }
            }));
        }
        start.countDown();
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> f : futures) {
            outcomes.add(f.get(60, TimeUnit.SECONDS));
        }

        assertThat(outcomes).filteredOn(o -> o instanceof Outcome.Executed).hasSize(1);
        String receipt = outcomes.stream().filter(o -> o instanceof Outcome.Executed).findFirst().orElseThrow().orThrow();
        assertThat(outcomes).as("every duplicate replays the payment, none is told the store failed")
                .filteredOn(o -> !(o instanceof Outcome.Executed))
                .allSatisfy(o -> assertThat(o).isEqualTo(new Outcome.Replayed<>(receipt))).hasSize(threads - 1);
        assertThat(payments()).isEqualTo(1);
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE})
    void aJoinedClaimOlderThanTheRecordIsInProgressAndItsRetryReplays(int isolation) throws Exception {
        IdempotencyKey key = IdempotencyKey.of(scope, "joined");
        AtomicInteger runs = new AtomicInteger();
        try (Connection app = ds.getConnection()) {
            app.setAutoCommit(false);
            app.setTransactionIsolation(isolation);
            try (Statement st = app.createStatement()) {
                st.execute("SELECT 1"); // the application's transaction takes its snapshot
            }
            Outcome<String> first;
            try (Connection other = ds.getConnection()) {
                first = tx.execute(other, key, fp, ResponseCodec.utf8(), attempt -> pay(other));
            }

            TransactionalRetrySafe.Joined<String> joined = tx.join(app, key, fp, ResponseCodec.utf8(), attempt -> {
                runs.incrementAndGet();
                return pay(app);
            });

            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(joined.outcome()).as("a claim whose snapshot cannot see the record").isInstanceOf(
                    Outcome.InProgress.class);
            assertThat(joined.commit()).isFalse();
            app.rollback();
            Outcome<String> retry;
            try (Connection c = ds.getConnection()) {
                c.setTransactionIsolation(isolation);
                retry = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c));
            }
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(first.orThrow()));
        }
        assertThat(runs).as("the joined request's work").hasValue(0);
        assertThat(payments()).isEqualTo(1);
    }

    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE})
    void aClaimFirstInTheApplicationsNewTransactionRunsAgainAndReplays(int isolation) throws Exception {
        IdempotencyKey key = IdempotencyKey.of(scope, "new-transaction");
        AtomicInteger runs = new AtomicInteger();
        try (Connection app = ds.getConnection()) {
            app.setAutoCommit(false);
            app.setTransactionIsolation(isolation);
            try (Statement st = app.createStatement()) {
                st.execute("SELECT 1"); // the transaction's snapshot, older than the record written next
            }
            Outcome<String> first;
            try (Connection other = ds.getConnection()) {
                first = tx.execute(other, key, fp, ResponseCodec.utf8(), attempt -> pay(other));
            }

            TransactionalRetrySafe.Joined<String> joined = tx.joinNew(app, key, fp, ResponseCodec.utf8(), attempt -> {
                runs.incrementAndGet();
                return pay(app);
            });

            assertThat(joined.outcome()).as("the claim, run again in a new transaction")
                    .isEqualTo(new Outcome.Replayed<>(first.orThrow()));
            assertThat(joined.commit()).isFalse();
            app.rollback();
        }
        assertThat(runs).as("the joined request's work").hasValue(0);
        assertThat(payments()).isEqualTo(1);
    }

    private String pay(Connection c) throws SQLException {
        UUID id = UUID.randomUUID();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rs_pg_isolation_payment (id, scope) VALUES (?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, scope);
            ps.executeUpdate();
        }
        return "payment " + id;
    }

    private int payments() throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM rs_pg_isolation_payment WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
