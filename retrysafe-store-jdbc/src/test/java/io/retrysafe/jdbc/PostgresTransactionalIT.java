package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
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

/** Transactional mode on PostgreSQL with a real business table: what a payment service would see. */
class PostgresTransactionalIT {
    private static final String TABLE = "rs_pg_tx_it";
    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static TransactionalRetrySafe tx;
    private static ExecutorService pool;

    private String scope;
    private final Fingerprint fp = Fingerprint.sha256("pay 100".getBytes(StandardCharsets.UTF_8));

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(1)).build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_pg_payment (id uuid PRIMARY KEY, scope text NOT NULL, amount int NOT NULL)");
            st.execute("CREATE TABLE IF NOT EXISTS rs_pg_deferred (id uuid PRIMARY KEY, scope text NOT NULL, "
                    + "slot int NOT NULL, CONSTRAINT rs_pg_deferred_slot UNIQUE (scope, slot) DEFERRABLE INITIALLY DEFERRED)");
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
        scope = "tx-it-" + UUID.randomUUID();
    }

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private static String pay(Connection c, String scope, int amount) throws SQLException {
        UUID id = UUID.randomUUID();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO rs_pg_payment (id, scope, amount) VALUES (?, ?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, scope);
            ps.setInt(3, amount);
            ps.executeUpdate();
        }
        return "payment " + id;
    }

    private int payments() throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM rs_pg_payment WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private Outcome<String> execute(IdempotencyKey key, Fingerprint fingerprint, TransactionalRetrySafe mode,
            io.retrysafe.Operation<String> op) throws SQLException {
        try (Connection c = ds.getConnection()) {
            return mode.execute(c, key, fingerprint, ResponseCodec.utf8(), op);
        }
    }

    /** The claim before the operation's stage, the commit once it completes: nothing is visible in between. */
    @Test
    void executeAsyncCommitsWhenTheStageCompletesAndNotBefore() throws Exception {
        IdempotencyKey key = key("async");
        CompletableFuture<String> answer = new CompletableFuture<>();
        try (Connection c = ds.getConnection()) {
            CompletableFuture<Outcome<String>> outcome = tx.executeAsync(c, key, fp, ResponseCodec.utf8(), attempt -> {
                pay(c, scope, 100);
                return answer;
            }).toCompletableFuture();

            assertThat(outcome).isNotDone();
            assertThat(payments()).as("not committed while the stage runs").isZero();
            assertThat(execute(key, fp, tx, attempt -> "must not run"))
                    .as("a duplicate meets the claim").isInstanceOf(Outcome.InProgress.class);

            answer.complete("paid");
            assertThat(outcome.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            assertThat(c.getAutoCommit()).as("auto-commit restored").isTrue();
        }
        assertThat(payments()).isEqualTo(1);
        assertThat(execute(key, fp, tx, attempt -> "must not run")).isEqualTo(new Outcome.Replayed<>("paid"));
    }

    @Test
    void executeAsyncRollsBackAndReleasesWhenTheStageFails() throws Exception {
        IdempotencyKey key = key("async-fails");
        CompletableFuture<String> answer = new CompletableFuture<>();
        try (Connection c = ds.getConnection()) {
            CompletableFuture<Outcome<String>> outcome = tx.executeAsync(c, key, fp, ResponseCodec.utf8(), attempt -> {
                pay(c, scope, 100);
                return answer;
            }).toCompletableFuture();

            answer.completeExceptionally(new IllegalStateException("the handler failed"));
            assertThatThrownBy(() -> outcome.get(10, TimeUnit.SECONDS)).hasRootCauseMessage("the handler failed");
        }
        assertThat(payments()).isZero();
        assertThat(execute(key, fp, tx, attempt -> "ran again"))
                .as("released: a retry runs").isInstanceOf(Outcome.Executed.class);
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
        ResponseCodec<StoredResponse> codec = ResponseCodec.identity();
        Outcome<StoredResponse> outcome;
        try (Connection c = ds.getConnection()) {
            outcome = tx.execute(c, key, fp, codec, attempt -> {
                pay(c, scope, 100);
                return StoredResponse.of(503, "try later".getBytes(StandardCharsets.UTF_8));
            });
        }
        assertThat(((Outcome.Executed<StoredResponse>) outcome).completion()).isEqualTo(Outcome.Completion.RELEASED);
        assertThat(payments()).isZero();
        assertThat(store.inspect(key)).isEmpty();
    }

    @Test
    void aDuplicateWaitsOnTheUniqueIndexUntilTheFirstCommitsThenReplays() throws Exception {
        IdempotencyKey key = key("k-wait");
        CountDownLatch insideFirst = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        Future<Outcome<String>> holder = pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    String receipt = pay(c, scope, 100);
                    insideFirst.countDown();
                    assertThat(finishFirst.await(30, TimeUnit.SECONDS)).isTrue();
                    return receipt;
                });
            }
        });
        assertThat(insideFirst.await(10, TimeUnit.SECONDS)).isTrue();
        TransactionalRetrySafe patient = TransactionalRetrySafe.of(RetrySafe.builder(
                JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(30)).build()).build());
        AtomicInteger duplicateRuns = new AtomicInteger();
        Future<Outcome<String>> duplicate = pool.submit(() -> execute(key, fp, patient, attempt -> {
            duplicateRuns.incrementAndGet();
            return "duplicate ran";
        }));
        await().atMost(Duration.ofSeconds(10)).until(() -> waitingOnLocks() >= 1);
        assertThat(duplicate).isNotDone();
        finishFirst.countDown();

        Outcome<String> firstOutcome = holder.get(10, TimeUnit.SECONDS);
        Outcome<String> duplicateOutcome = duplicate.get(10, TimeUnit.SECONDS);
        assertThat(duplicateOutcome).isEqualTo(new Outcome.Replayed<>(firstOutcome.orThrow()));
        assertThat(duplicateRuns).hasValue(0);
        assertThat(payments()).isEqualTo(1);
    }

    private static int waitingOnLocks() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        + " AND query LIKE '%INSERT INTO " + TABLE + "%'")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void aDuplicateWaitingPastTheLockTimeoutIsToldInProgress() throws Exception {
        IdempotencyKey key = key("k-timeout");
        CountDownLatch insideFirst = new CountDownLatch(1);
        CountDownLatch finishFirst = new CountDownLatch(1);
        Future<Outcome<String>> holder = pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                return tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    String receipt = pay(c, scope, 100);
                    insideFirst.countDown();
                    assertThat(finishFirst.await(30, TimeUnit.SECONDS)).isTrue();
                    return receipt;
                });
            }
        });
        assertThat(insideFirst.await(10, TimeUnit.SECONDS)).isTrue();
        Outcome<String> duplicate;
        try (Connection c = ds.getConnection()) {
            duplicate = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> "duplicate ran");
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW lock_timeout")) {
                rs.next();
                assertThat(rs.getString(1)).as("the lock bound must not leak into the connection").isEqualTo("0");
            }
        }
        assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
        finishFirst.countDown();
        Outcome<String> first = holder.get(10, TimeUnit.SECONDS);
        assertThat(execute(key, fp, tx, attempt -> "late")).isEqualTo(new Outcome.Replayed<>(first.orThrow()));
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void manyConcurrentDuplicatesMakeExactlyOnePayment() throws Exception {
        IdempotencyKey key = key("k-storm");
        int threads = 16;
        CountDownLatch start = new CountDownLatch(1);
        TransactionalRetrySafe patient = TransactionalRetrySafe.of(RetrySafe.builder(
                JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(20)).build()).build());
        List<Future<Outcome<String>>> futures = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            futures.add(pool.submit(() -> {
                try (Connection c = ds.getConnection()) {
                    assertThat(start.await(10, TimeUnit.SECONDS)).isTrue();
                    return patient.execute(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
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
        assertThat(outcomes).filteredOn(o -> o instanceof Outcome.Replayed)
                .allSatisfy(o -> assertThat(o.orThrow()).isEqualTo(receipt)).hasSize(threads - 1);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void aFailedCommitIsNeverReportedAsSuccessAndLeavesNothing() throws SQLException {
        IdempotencyKey key = key("k-commit-fails");
        assertThatThrownBy(() -> {
            try (Connection c = ds.getConnection()) {
                tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    // Two rows in one slot: the deferred constraint fails at COMMIT, not here.
                    for (int i = 0; i < 2; i++) {
                        try (PreparedStatement ps = c.prepareStatement(
                                "INSERT INTO rs_pg_deferred (id, scope, slot) VALUES (?, ?, 1)")) {
                            ps.setObject(1, UUID.randomUUID());
                            ps.setString(2, scope);
                            ps.executeUpdate();
                        }
                    }
                    return "looked fine";
                });
            }
        }).isInstanceOf(StoreUnavailableException.class).hasMessageContaining("commit");
        assertThat(store.inspect(key)).isEmpty();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM rs_pg_deferred WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
        }
    }

    @Test
    void aReusedKeyWithAnotherRequestIsRefusedAndNothingRuns() throws SQLException {
        IdempotencyKey key = key("k-mismatch");
        execute(key, fp, tx, attempt -> "first");
        AtomicInteger runs = new AtomicInteger();
        Outcome<String> other = execute(key, Fingerprint.sha256("pay 999".getBytes(StandardCharsets.UTF_8)), tx,
                attempt -> {
                    runs.incrementAndGet();
                    return "second";
                });
        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(runs).hasValue(0);
        assertThat(execute(key, fp, tx, attempt -> "x")).isEqualTo(new Outcome.Replayed<>("first"));
    }

    @Test
    void aReleasedStandaloneRecordIsTakenOverAsTheNextAttempt() throws SQLException {
        IdempotencyKey key = key("k-takeover");
        OwnerToken token = OwnerToken.random();
        ClaimResult claimed = store.tryClaim(new ClaimRequest(key, fp, token, Duration.ofSeconds(30), Duration.ofHours(1)));
        assertThat(claimed).isInstanceOf(ClaimResult.Claimed.class);
        store.release(key, token);
        Outcome<String> outcome;
        try (Connection c = ds.getConnection()) {
            outcome = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> "attempt " + attempt.number());
        }
        assertThat(outcome.orThrow()).isEqualTo("attempt 2");
        assertThat(store.inspect(key)).get().extracting(r -> r.attempt()).isEqualTo(2);
    }

    @Test
    void joinedToTheCallersTransactionNothingIsCommittedUntilTheCallerCommits() throws SQLException {
        IdempotencyKey key = key("k-join");
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            TransactionalRetrySafe.Joined<String> joined = tx.join(c, key, fp, ResponseCodec.utf8(),
                    attempt -> pay(c, scope, 100));
            assertThat(joined.commit()).isTrue();
            assertThat(store.inspect(key)).as("invisible before the caller commits").isEmpty();
            assertThat(payments()).isZero();
            c.commit();
            c.setAutoCommit(true);
        }
        assertThat(store.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(payments()).isEqualTo(1);
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            TransactionalRetrySafe.Joined<String> replay = tx.join(c, key, fp, ResponseCodec.utf8(), attempt -> "again");
            assertThat(replay.commit()).as("a replay writes nothing to commit").isFalse();
            assertThat(replay.outcome()).isInstanceOf(Outcome.Replayed.class);
            c.rollback();
            c.setAutoCommit(true);
        }
    }

    @Test
    void joinedOutcomeIsHeardOnlyOnceTheCallerSaysWhatBecameOfItsTransaction() throws SQLException {
        List<String> heard = new CopyOnWriteArrayList<>();
        TransactionalRetrySafe listened = TransactionalRetrySafe.of(RetrySafe.builder(store)
                .listener(new RetrySafeListener() {
                    @Override
                    public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                        heard.add(outcome instanceof Outcome.Executed<?> e ? "executed " + e.completion()
                                : outcome.getClass().getSimpleName());
                    }

                    @Override
                    public void onStoreError(String storeName, String operation, RuntimeException error) {
                        heard.add("store error " + operation);
                    }
                }).build());
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            TransactionalRetrySafe.Joined<String> committed = listened.join(c, key("k-heard-commit"), fp,
                    ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
            assertThat(heard).as("nothing before the caller's commit").isEmpty();
            c.commit();
            committed.committed();
            committed.committed();
            assertThat(heard).as("once, after the commit").containsExactly("executed STORED");

            TransactionalRetrySafe.Joined<String> replay = listened.join(c, key("k-heard-commit"), fp,
                    ResponseCodec.utf8(), attempt -> "again");
            c.rollback();
            assertThat(replay.commit()).isFalse();
            assertThat(heard).as("a replay is final at once").containsExactly("executed STORED", "Replayed");

            heard.clear();
            TransactionalRetrySafe.Joined<String> rolledBack = listened.join(c, key("k-heard-rollback"), fp,
                    ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
            c.rollback();
            rolledBack.rolledBack();
            assertThat(heard).containsExactly("executed RELEASED");

            heard.clear();
            TransactionalRetrySafe.Joined<String> failed = listened.join(c, key("k-heard-failed"), fp,
                    ResponseCodec.utf8(), attempt -> pay(c, scope, 100));
            c.rollback();
            StoreUnavailableException answer = failed.commitFailed(new IllegalStateException("connection lost"));
            assertThat(answer).hasMessageContaining("did not commit: connection lost")
                    .hasCauseInstanceOf(IllegalStateException.class);
            assertThat(answer.storeName()).isEqualTo(store.name());
            assertThat(heard).containsExactly("store error commit", "StoreUnavailable");
            c.setAutoCommit(true);
        }
    }

    @Test
    void joinedOperationThatFailsTellsTheCallerToRollBack() throws SQLException {
        IdempotencyKey key = key("k-join-503");
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            TransactionalRetrySafe.Joined<StoredResponse> joined = tx.join(c, key, fp, ResponseCodec.identity(), attempt -> {
                pay(c, scope, 100);
                return StoredResponse.of(503, new byte[0]);
            });
            assertThat(joined.commit()).isFalse();
            c.rollback();
            c.setAutoCommit(true);
        }
        assertThat(store.inspect(key)).isEmpty();
        assertThat(payments()).isZero();
    }

    @Test
    void theClaimsLockBoundDoesNotApplyToTheOperationsOwnStatements() throws SQLException {
        IdempotencyKey key = key("k-lock-bound");
        try (Connection c = ds.getConnection()) {
            try (Statement st = c.createStatement()) {
                st.execute("SET lock_timeout = '7s'");
            }
            Outcome<String> outcome = tx.execute(c, key, fp, ResponseCodec.utf8(), attempt -> {
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW lock_timeout")) {
                    rs.next();
                    return rs.getString(1);
                }
            });
            assertThat(outcome.orThrow()).as("lock_timeout seen by the operation").isEqualTo("7s");
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW lock_timeout")) {
                rs.next();
                assertThat(rs.getString(1)).as("lock_timeout after execute").isEqualTo("7s");
                st.execute("RESET lock_timeout");
            }
        }
    }
}
