package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Duplicates from other instances (each its own engine, so nothing in memory stops them) claim a key
 * another transaction holds: at most {@code maxWaitingClaims} of them wait on the database, each
 * holding a connection; the others answer in progress at once, long before the lock timeout.
 */
class PostgresWaitingClaimsIT {
    private static final String TABLE = "rs_pg_waiting_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    private static final int MAX_WAITING = 2;
    private static final int DUPLICATES = 6;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    /** Threads of their own: the common pool may have one thread on a small machine, and these block. */
    private static ExecutorService threads;

    @BeforeAll
    static void setUp() {
        ds = TestDatabases.postgres();
        // Far longer than the test: a duplicate that answers before the holder ends did not wait for it.
        store = JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(60))
                .maxWaitingClaims(MAX_WAITING).build();
        store.createSchema();
        threads = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void dropTable() throws SQLException {
        threads.shutdownNow();
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + TABLE);
        }
    }

    @Test
    void claimsBeyondTheBoundDoNotWaitOnTheKey() throws Exception {
        IdempotencyKey key = IdempotencyKey.of("waiting", UUID.randomUUID().toString());
        Fingerprint fp = Fingerprint.sha256("transfer 10".getBytes(StandardCharsets.UTF_8));
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        CompletableFuture<Outcome<String>> first = CompletableFuture.supplyAsync(() -> instance().execute(key, fp,
                attempt -> {
                    holding.countDown();
                    assertThat(finish.await(60, TimeUnit.SECONDS)).isTrue();
                    return "first";
                }), threads);
        assertThat(holding.await(30, TimeUnit.SECONDS)).isTrue();

        List<CompletableFuture<Outcome<String>>> duplicates = new ArrayList<>();
        try {
            for (int i = 0; i < DUPLICATES; i++) {
                duplicates.add(CompletableFuture.supplyAsync(() -> instance().execute(key, fp, attempt -> "duplicate"),
                        threads));
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> duplicates.stream().filter(CompletableFuture::isDone)
                    .count() == DUPLICATES - MAX_WAITING && claimsWaitingOnALock() == MAX_WAITING);
            assertThat(duplicates.stream().filter(CompletableFuture::isDone).map(CompletableFuture::join))
                    .as("beyond the bound: in progress while the holder still runs").hasSize(DUPLICATES - MAX_WAITING)
                    .allSatisfy(o -> assertThat(o).isInstanceOf(Outcome.InProgress.class));
        } finally {
            finish.countDown();
        }

        assertThat(first.get(30, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
        List<Outcome<String>> all = duplicates.stream().map(CompletableFuture::join).toList();
        assertThat(all).filteredOn(o -> o instanceof Outcome.Replayed).as("the waiting ones replay").hasSize(MAX_WAITING);
        assertThat(all).filteredOn(o -> o instanceof Outcome.Executed).isEmpty();
    }

    /**
     * A completed record does not change until it is purged: a replay reads it without waiting for whatever
     * holds its row (another instance's transaction, an operator's query), so duplicates of an answered key
     * replay side by side instead of one after another.
     */
    @Test
    void aReplayDoesNotWaitForATransactionHoldingTheCompletedRecord() throws Exception {
        IdempotencyKey key = IdempotencyKey.of("waiting", UUID.randomUUID().toString());
        Fingerprint fp = Fingerprint.sha256("transfer 20".getBytes(StandardCharsets.UTF_8));
        assertThat(instance().execute(key, fp, attempt -> "first")).isInstanceOf(Outcome.Executed.class);

        try (Connection holder = ds.getConnection()) {
            holder.setAutoCommit(false);
            lockRecord(holder, key);
            // The lock timeout is a minute: a replay that waited for the row would not answer within the bound.
            CompletableFuture<Outcome<String>> replay = CompletableFuture.supplyAsync(
                    () -> instance().execute(key, fp, attempt -> "again"), threads);
            try {
                assertThat(replay.get(20, TimeUnit.SECONDS)).isEqualTo(new Outcome.Replayed<>("first"));
            } finally {
                holder.rollback();
            }
        }
    }

    /**
     * A standalone claim is its own transaction, so its lock bound is set by the claim's one statement and ends
     * with that transaction: it bounds the wait for a transaction holding the key (another instance's, in
     * transactional mode), and the pooled connection keeps its own setting, whether the pool commits each
     * statement or the store commits the claim.
     */
    @ParameterizedTest(name = "auto-commit {0}")
    @ValueSource(booleans = {true, false})
    void aStandaloneClaimWaitsForAHolderOnlyUpToTheBoundAndLeavesTheConnectionsOwn(boolean autoCommit)
            throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(1); // the claim's connection is the one read after it
        config.setAutoCommit(autoCommit);
        config.addDataSourceProperty("options", "-c lock_timeout=7s"); // the session's own, from its start
        IdempotencyKey key = IdempotencyKey.of("waiting", UUID.randomUUID().toString());
        Fingerprint fp = Fingerprint.sha256("transfer 30".getBytes(StandardCharsets.UTF_8));
        try (HikariDataSource pool = new HikariDataSource(config)) {
            JdbcIdempotencyStore bounded = JdbcIdempotencyStore.builder(pool).table(TABLE)
                    .lockTimeout(Duration.ofSeconds(1)).build();
            assertThat(bounded.tryClaim(claim(key, fp))).isInstanceOf(ClaimResult.Claimed.class);
            try (Connection holder = ds.getConnection()) {
                holder.setAutoCommit(false);
                lockRecord(holder, key);
                // Neither the connection's 7 s nor no bound at all: the store's second.
                CompletableFuture<ClaimResult> duplicate = CompletableFuture.supplyAsync(
                        () -> bounded.tryClaim(claim(key, fp)), threads);
                try {
                    assertThat(duplicate.get(5, TimeUnit.SECONDS))
                            .isEqualTo(new ClaimResult.InProgress(Duration.ofSeconds(1)));
                } finally {
                    holder.rollback();
                }
            }
            try (Connection c = pool.getConnection(); Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SHOW lock_timeout")) {
                assertThat(rs.next()).isTrue();
                assertThat(rs.getString(1)).isEqualTo("7s");
            }
        }
    }

    /** Locks the key's record in {@code holder}'s transaction, as another instance's transaction holding it would. */
    private static void lockRecord(Connection holder, IdempotencyKey key) throws SQLException {
        try (PreparedStatement lock = holder.prepareStatement("SELECT 1 FROM " + TABLE
                + " WHERE scope = ? AND idem_key = ? FOR UPDATE")) {
            lock.setString(1, key.scope());
            lock.setString(2, key.value());
            assertThat(lock.executeQuery().next()).isTrue();
        }
    }

    private static ClaimRequest claim(IdempotencyKey key, Fingerprint fp) {
        return new ClaimRequest(key, fp, OwnerToken.random(), Duration.ofSeconds(30), Duration.ofHours(1));
    }

    /** A transactional engine of its own, as another instance has, running on a connection of its own. */
    private static Instance instance() {
        return new Instance(TransactionalRetrySafe.of(RetrySafe.builder(store).build()));
    }

    private record Instance(TransactionalRetrySafe tx) {
        Outcome<String> execute(IdempotencyKey key, Fingerprint fp, io.retrysafe.Operation<String> operation) {
            try (Connection c = ds.getConnection()) {
                return tx.execute(c, key, fp, ResponseCodec.utf8(), operation);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    private static int claimsWaitingOnALock() throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        + " AND position('" + TABLE + "' in query) > 0")) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
