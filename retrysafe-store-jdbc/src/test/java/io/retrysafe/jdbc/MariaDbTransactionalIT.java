package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
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
import org.junit.jupiter.api.Test;

/** Transactional mode on MariaDB with a real business table: what a payment service would see. */
class MariaDbTransactionalIT {
    private static final String TABLE = MariaDbStandaloneContractIT.TABLE;
    private static final Duration LOCK_TIMEOUT = Duration.ofSeconds(1);

    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static TransactionalRetrySafe tx;
    private static ExecutorService pool;

    private String scope;
    private final Fingerprint fp = Fingerprint.sha256("pay 100".getBytes(StandardCharsets.UTF_8));

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.mariadb();
        store = JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.MARIADB).table(TABLE).lockTimeout(LOCK_TIMEOUT)
                .build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_mariadb_payment (id VARCHAR(36) PRIMARY KEY,"
                    + " scope VARCHAR(255) NOT NULL, amount INT NOT NULL, INDEX rs_mariadb_payment_scope (scope)) ENGINE = InnoDB");
        }
        tx = TransactionalRetrySafe.of(RetrySafe.builder(store).build());
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    @BeforeEach
    void newScope() {
        scope = "mariadb-tx-it-" + UUID.randomUUID();
    }

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private static String pay(Connection c, String scope, int amount) throws SQLException {
        String id = UUID.randomUUID().toString();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rs_mariadb_payment (id, scope, amount) VALUES (?, ?, ?)")) {
            ps.setString(1, id);
            ps.setString(2, scope);
            ps.setInt(3, amount);
            ps.executeUpdate();
        }
        return "payment " + id;
    }

    private int payments() throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM rs_mariadb_payment WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private Outcome<String> execute(IdempotencyKey key, Fingerprint fingerprint, TransactionalRetrySafe mode,
            Operation<String> op) throws SQLException {
        try (Connection c = ds.getConnection()) {
            return mode.execute(c, key, fingerprint, ResponseCodec.utf8(), op);
        }
    }

    /** Runs {@code key} on its own connection inside a transaction that stays open until {@code finish} opens. */
    private Future<Outcome<String>> holdOpen(IdempotencyKey key, CountDownLatch inside, CountDownLatch finish) {
        return pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    String receipt = pay(c, scope, 100);
                    inside.countDown();
                    assertThat(finish.await(30, TimeUnit.SECONDS)).as("the test let the first transaction finish").isTrue();
                    return receipt;
                });
            }
        });
    }

    @Test
    void keyWritesAndResponseCommitTogetherAndRetriesReplay() throws SQLException {
        IdempotencyKey key = key("k1");
        AtomicInteger runs = new AtomicInteger();
        Outcome<String> first;
        try (Connection c = ds.getConnection()) {
            first = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                runs.incrementAndGet();
                return pay(c, scope, 100);
            });
            assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
        }
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<String>) first).completion()).isEqualTo(Outcome.Completion.STORED);
        assertThat(payments()).isEqualTo(1);
        assertThat(store.inspect(key)).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.response()).get().extracting(StoredResponse::status).isEqualTo(200);
        });

        for (int i = 0; i < 3; i++) {
            Outcome<String> retry = execute(key, fp, tx, attempt -> {
                runs.incrementAndGet();
                return "must not run";
            });
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(first.orThrow()));
        }
        assertThat(runs).hasValue(1);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void anExceptionRollsBackTheWritesAndLeavesNoKey() throws SQLException {
        IdempotencyKey key = key("k-fail");
        assertThatThrownBy(() -> {
            try (Connection c = ds.getConnection()) {
                tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    pay(c, scope, 100);
                    throw new IllegalStateException("provider said no");
                });
            }
        }).isInstanceOf(IllegalStateException.class).hasMessage("provider said no");
        assertThat(payments()).isZero();
        assertThat(store.inspect(key)).isEmpty();

        Outcome<String> retry;
        try (Connection c = ds.getConnection()) {
            retry = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
        }
        assertThat(retry).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<String>) retry).attempt().number()).isEqualTo(1);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void aServerErrorResultRollsBackAndTheRetryRunsAgain() throws SQLException {
        IdempotencyKey key = key("k-503");
        Outcome<StoredResponse> outcome;
        try (Connection c = ds.getConnection()) {
            outcome = tx.execute(c, key, fp, ResponseCodec.identity(), attempt -> {
                pay(c, scope, 100);
                return StoredResponse.of(503, "try later".getBytes(StandardCharsets.UTF_8));
            });
        }
        assertThat(((Outcome.Executed<StoredResponse>) outcome).completion()).isEqualTo(Outcome.Completion.RELEASED);
        assertThat(payments()).isZero();
        assertThat(store.inspect(key)).isEmpty();

        Outcome<String> retry;
        try (Connection c = ds.getConnection()) {
            retry = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
        }
        assertThat(retry).isInstanceOf(Outcome.Executed.class);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void manyConcurrentDuplicatesOnTheirOwnConnectionsMakeExactlyOnePayment() throws Exception {
        IdempotencyKey key = key("k-storm");
        int threads = 16;
        CountDownLatch connected = new CountDownLatch(threads);
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        List<Future<Outcome<String>>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            futures.add(pool.submit(() -> {
                try (Connection c = ds.getConnection()) {
                    connected.countDown();
                    assertThat(start.await(30, TimeUnit.SECONDS)).isTrue();
                    return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                        runs.incrementAndGet();
                        return pay(c, scope, 100);
                    });
                }
            }));
        }
        assertThat(connected.await(30, TimeUnit.SECONDS)).as("16 threads hold a connection each").isTrue();
        start.countDown();
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> f : futures) {
            outcomes.add(f.get(60, TimeUnit.SECONDS));
        }

        assertThat(outcomes).filteredOn(o -> o instanceof Outcome.Executed).as("outcomes: %s", outcomes).hasSize(1);
        String receipt = outcomes.stream().filter(o -> o instanceof Outcome.Executed).findFirst().orElseThrow().orThrow();
        assertThat(outcomes).as("every other thread replays the same answer or is told to retry later")
                .filteredOn(o -> !(o instanceof Outcome.Executed))
                .allSatisfy(o -> assertThat(o).isIn(new Outcome.Replayed<>(receipt),
                        new Outcome.InProgress<>(tx.engine().policy().retryAfter())));
        assertThat(runs).hasValue(1);
        assertThat(payments()).isEqualTo(1);
        assertThat(execute(key, fp, tx, attempt -> "late")).isEqualTo(new Outcome.Replayed<>(receipt));
    }

    @Test
    void aDuplicateWaitsForTheFirstToCommitThenReplays() throws Exception {
        IdempotencyKey key = key("k-wait");
        CountDownLatch insideFirst = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        Future<Outcome<String>> holder = holdOpen(key, insideFirst, finishFirst);
        assertThat(insideFirst.await(10, TimeUnit.SECONDS)).isTrue();
        TransactionalRetrySafe patient = TransactionalRetrySafe.of(RetrySafe.builder(JdbcIdempotencyStore.builder(ds)
                .dialect(JdbcDialect.MARIADB).table(TABLE).lockTimeout(Duration.ofSeconds(30)).build()).build());
        AtomicInteger duplicateRuns = new AtomicInteger();
        Future<Outcome<String>> duplicate = pool.submit(() -> execute(key, fp, patient, attempt -> {
            duplicateRuns.incrementAndGet();
            return "duplicate ran";
        }));
        await().atMost(Duration.ofSeconds(10)).until(() -> claimsWaitingOnALock() >= 1);
        assertThat(duplicate).isNotDone();

        finishFirst.countDown();

        Outcome<String> firstOutcome = holder.get(10, TimeUnit.SECONDS);
        assertThat(duplicate.get(10, TimeUnit.SECONDS)).isEqualTo(new Outcome.Replayed<>(firstOutcome.orThrow()));
        assertThat(duplicateRuns).hasValue(0);
        assertThat(payments()).isEqualTo(1);
    }

    private static int claimsWaitingOnALock() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM information_schema.INNODB_TRX"
                        + " WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%INSERT INTO " + TABLE + " %'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void whenTheFirstRollsBackOneWaitingDuplicateRunsAndTheOtherReplays() throws Exception {
        IdempotencyKey key = key("k-rollback");
        CountDownLatch insideFirst = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        Future<Outcome<String>> holder = pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    pay(c, scope, 100);
                    insideFirst.countDown();
                    assertThat(finishFirst.await(30, TimeUnit.SECONDS)).isTrue();
                    throw new IllegalStateException("provider said no");
                });
            }
        });
        assertThat(insideFirst.await(10, TimeUnit.SECONDS)).isTrue();
        TransactionalRetrySafe patient = TransactionalRetrySafe.of(RetrySafe.builder(JdbcIdempotencyStore.builder(ds)
                .dialect(JdbcDialect.MARIADB).table(TABLE).lockTimeout(Duration.ofSeconds(30)).build()).build());
        AtomicInteger runs = new AtomicInteger();
        List<Future<Outcome<String>>> duplicates = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            duplicates.add(pool.submit(() -> {
                try (Connection c = ds.getConnection()) {
                    return patient.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                        runs.incrementAndGet();
                        return pay(c, scope, 100);
                    });
                }
            }));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> claimsWaitingOnALock() >= 2);
        long deadlocksBefore = deadlocks();

        // Both waiters' locks pass to the gap the rolled-back row leaves, and InnoDB picks one of them
        // as a deadlock victim: that claim is retried, and waits for the other.
        finishFirst.countDown();

        assertThatThrownBy(() -> holder.get(10, TimeUnit.SECONDS)).hasRootCauseInstanceOf(IllegalStateException.class);
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> f : duplicates) {
            outcomes.add(f.get(30, TimeUnit.SECONDS));
        }
        assertThat(outcomes).filteredOn(o -> o instanceof Outcome.Executed).as("outcomes: %s", outcomes).hasSize(1);
        String receipt = outcomes.stream().filter(o -> o instanceof Outcome.Executed).findFirst().orElseThrow().orThrow();
        assertThat(outcomes).contains(new Outcome.Replayed<>(receipt));
        assertThat(runs).hasValue(1);
        assertThat(payments()).isEqualTo(1);
        assertThat(deadlocks()).as("InnoDB deadlocks while the duplicates competed (the case this test is about)")
                .isGreaterThan(deadlocksBefore);
    }

    private static long deadlocks() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")) {
            rs.next();
            return rs.getLong(2);
        }
    }

    @Test
    void aDuplicateWaitingPastTheLockTimeoutIsToldInProgress() throws Exception {
        IdempotencyKey key = key("k-timeout");
        CountDownLatch insideFirst = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        Future<Outcome<String>> holder = holdOpen(key, insideFirst, finishFirst);
        assertThat(insideFirst.await(10, TimeUnit.SECONDS)).isTrue();
        AtomicInteger duplicateRuns = new AtomicInteger();
        Outcome<String> duplicate;
        long started = System.nanoTime();
        try (Connection c = ds.getConnection()) {
            duplicate = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                duplicateRuns.incrementAndGet();
                return "duplicate ran";
            });
            try (Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SELECT @@session.innodb_lock_wait_timeout = @@global.innodb_lock_wait_timeout")) {
                rs.next();
                assertThat(rs.getBoolean(1)).as("the lock bound must not leak into the connection").isTrue();
            }
        }
        Duration waited = Duration.ofNanos(System.nanoTime() - started);

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(tx.engine().policy().retryAfter()));
        assertThat(waited).as("the duplicate waited for the lock timeout, not for the first transaction")
                .isGreaterThanOrEqualTo(LOCK_TIMEOUT).isLessThan(Duration.ofSeconds(10));
        assertThat(holder).as("the first transaction is still open").isNotDone();
        assertThat(duplicateRuns).hasValue(0);

        finishFirst.countDown();
        Outcome<String> first = holder.get(10, TimeUnit.SECONDS);
        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(execute(key, fp, tx, attempt -> "late")).isEqualTo(new Outcome.Replayed<>(first.orThrow()));
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void aReusedKeyWithAnotherRequestIsRefusedAndNothingRuns() throws SQLException {
        IdempotencyKey key = key("k-mismatch");
        String first = execute(key, fp, tx, attempt -> "first").orThrow();
        AtomicInteger runs = new AtomicInteger();
        Outcome<String> other = execute(key, Fingerprint.sha256("pay 999".getBytes(StandardCharsets.UTF_8)), tx,
                attempt -> {
                    runs.incrementAndGet();
                    return "second";
                });
        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(runs).hasValue(0);
        assertThat(execute(key, fp, tx, attempt -> "x")).isEqualTo(new Outcome.Replayed<>(first));
    }

    @Test
    void aKeyInAnotherCaseOrWithATrailingSpaceIsAnotherKey() throws SQLException {
        String first = execute(key("Key"), fp, tx, attempt -> "Key").orThrow();
        assertThat(execute(key("key"), fp, tx, attempt -> "key").orThrow()).isEqualTo("key");
        assertThat(execute(key("Key "), fp, tx, attempt -> "Key ").orThrow()).isEqualTo("Key ");
        assertThat(execute(key("Key"), fp, tx, attempt -> "ran again")).isEqualTo(new Outcome.Replayed<>(first));
    }

    @Test
    void aReleasedStandaloneRecordIsTakenOverAsTheNextAttempt() throws SQLException {
        IdempotencyKey key = key("k-takeover");
        OwnerToken token = OwnerToken.random();
        ClaimResult claimed = store.tryClaim(new ClaimRequest(key, fp, token, Duration.ofSeconds(30), Duration.ofHours(1)));
        assertThat(claimed).isEqualTo(new ClaimResult.Claimed(token, 1));
        store.release(key, token);

        Outcome<String> outcome;
        try (Connection c = ds.getConnection()) {
            outcome = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> "attempt " + attempt.number());
        }

        assertThat(outcome.orThrow()).isEqualTo("attempt 2");
        assertThat(store.inspect(key)).get().extracting(r -> r.attempt()).isEqualTo(2);
    }
}
