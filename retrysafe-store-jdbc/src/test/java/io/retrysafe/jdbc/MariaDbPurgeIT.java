package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The purge job on MariaDB: bounded batches, expired records only, never waiting on open transactions, one runner. */
class MariaDbPurgeIT {
    private static final String TABLE = "rs_mariadb_purge_it";
    private static ExecutorService pool;

    private DataSource ds;
    private JdbcIdempotencyStore store;
    private final Fingerprint fp = Fingerprint.sha256(new byte[] {1});

    @BeforeAll
    static void startPool() {
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void stopPool() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    @BeforeEach
    void freshTable() throws SQLException {
        ds = TestDatabases.mariadb();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS " + TABLE);
        }
        store = JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.MARIADB).table(TABLE).lockTimeout(Duration.ofSeconds(1))
                .build();
        store.createSchema();
    }

    private IdempotencyKey completed(String value) {
        IdempotencyKey key = IdempotencyKey.of("purge", value);
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, Duration.ofSeconds(5), Duration.ofHours(1))))
                .isInstanceOf(ClaimResult.Claimed.class);
        store.complete(key, token, StoredResponse.of(201, new byte[] {42}), Duration.ofHours(1));
        return key;
    }

    /** Moves records into the past with the database's own clock, instead of waiting for them to expire. */
    private void expire(int count) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("UPDATE " + TABLE
                + " SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR WHERE idem_key LIKE 'old-%' ORDER BY idem_key LIMIT ?")) {
            ps.setInt(1, count);
            ps.executeUpdate();
        }
    }

    private void expiredRecords(int count) throws SQLException {
        for (int i = 0; i < count; i++) {
            completed("old-" + i);
        }
        expire(count);
    }

    private int rows() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM " + TABLE)) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private PurgeResult purgeWithin(JdbcPurger purger, Duration bound) throws Exception {
        Future<PurgeResult> run = pool.submit(purger::purge);
        return run.get(bound.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Test
    void deletesOnlyExpiredRecordsInBoundedBatches() throws Exception {
        expiredRecords(25);
        IdempotencyKey live = completed("live");

        PurgeResult result = store.purger().batchSize(10).build().purge();

        assertThat(result.ran()).isTrue();
        assertThat(result.finished()).isTrue();
        assertThat(result.deleted()).isEqualTo(25);
        assertThat(result.batches()).as("10 + 10 + 5, the short batch ends the run").isEqualTo(3);
        assertThat(rows()).isEqualTo(1);
        assertThat(store.inspect(live)).isPresent();
    }

    @Test
    void aPacedRunPausesBetweenBatchesAndDeletesExactlyTheExpiredRecords() throws Exception {
        expiredRecords(25);
        IdempotencyKey live = completed("live");
        long[] now = {0};
        List<Long> pauses = new ArrayList<>();
        // Every reading of the clock is 4 ms after the last: each batch measures 4 ms.
        JdbcPurger purger = store.purger().batchSize(10).maxDutyCycle(0.5)
                .pacing(() -> now[0] += 4_000_000, pauses::add).build();

        PurgeResult result = purger.purge();

        assertThat(pauses).as("as long as each batch at a share of 1/2, none after the last").containsExactly(4_000_000L,
                4_000_000L);
        assertThat(result.deleted()).isEqualTo(25);
        assertThat(rows()).isEqualTo(1);
        assertThat(store.inspect(live)).isPresent();
    }

    @Test
    void anInterruptDuringAPauseStopsTheRunWhichReleasesTheLock() throws Exception {
        expiredRecords(25);
        JdbcPurger purger = store.purger().batchSize(10).maxDutyCycle(0.5).pacing(System::nanoTime, nanos -> {
            throw new InterruptedException("closed");
        }).build();

        PurgeResult stopped;
        try {
            stopped = purger.purge();
        } finally {
            assertThat(Thread.interrupted()).as("the interrupt is kept for the caller").isTrue();
        }

        assertThat(stopped.deleted()).isEqualTo(10);
        assertThat(purgeWithin(store.purger().build(), Duration.ofSeconds(5)).deleted()).as("the lock was released")
                .isEqualTo(15);
    }

    @Test
    void maxBatchesBoundsOneRunAndTheNextRunContinues() throws SQLException {
        for (int i = 0; i < 30; i++) {
            completed("old-" + i);
        }
        expire(30);
        JdbcPurger purger = store.purger().batchSize(10).maxBatches(2).build();

        PurgeResult bounded = purger.purge();
        assertThat(bounded.deleted()).isEqualTo(20);
        assertThat(bounded.finished()).as("stopped at maxBatches after a full batch: more may be left").isFalse();
        assertThat(rows()).isEqualTo(10);
        PurgeResult rest = purger.purge();
        assertThat(rest.deleted()).isEqualTo(10);
        assertThat(rest.finished()).as("its second batch came up short").isTrue();
        assertThat(rows()).isZero();
    }

    @Test
    void purgeDoesNotWaitForAnOpenTransactionalClaimAndSkipsRowsLockedByOthers() throws Exception {
        for (int i = 0; i < 5; i++) {
            completed("old-" + i);
        }
        expire(5);
        try (Connection claimant = ds.getConnection(); Connection locker = ds.getConnection()) {
            // A transactional claim in flight: its uncommitted row is the first live one past the expired range.
            claimant.setAutoCommit(false);
            OwnerToken token = OwnerToken.random();
            assertThat(store.sql().requests().tryClaim(claimant, new ClaimRequest(IdempotencyKey.of("purge", "in-flight"), fp, token,
                    Duration.ofSeconds(30), Duration.ofHours(1)), Duration.ofSeconds(1), null, true))
                    .isEqualTo(new ClaimResult.Claimed(token, 1));
            // Another transaction holds one expired record.
            locker.setAutoCommit(false);
            try (Statement st = locker.createStatement()) {
                st.executeQuery("SELECT * FROM " + TABLE + " WHERE scope = 'purge' AND idem_key = 'old-0' FOR UPDATE").close();
            }

            PurgeResult result = purgeWithin(store.purger().batchSize(2).build(), Duration.ofSeconds(5));

            assertThat(result.deleted()).as("every expired record but the locked one").isEqualTo(4);
            locker.rollback();
            claimant.commit();
        }
        assertThat(store.purger().build().purge().deleted()).as("the record that was locked, once free").isEqualTo(1);
        assertThat(rows()).as("the claim that was in flight").isEqualTo(1);
    }

    @Test
    void aSecondInstanceSkipsWhileTheFirstHoldsThePurgeLock() throws SQLException {
        completed("old-1");
        expire(1);
        JdbcPurger purger = store.purger().build();
        try (Connection other = ds.getConnection()) {
            assertThat(store.sql().maintenance().tryLock(other, "retrysafe-purge:" + TABLE)).isTrue();
            PurgeResult skipped = purger.purge();
            assertThat(skipped.ran()).isFalse();
            assertThat(skipped.finished()).isFalse();
            assertThat(skipped.deleted()).isZero();
            assertThat(rows()).isEqualTo(1);
            store.sql().maintenance().unlock(other, "retrysafe-purge:" + TABLE);
        }
        assertThat(purger.purge().deleted()).isEqualTo(1);
    }

    @Test
    void lockNamesLongerThanMariaDbAllowsAreHashedAndStayDistinct() throws SQLException {
        String common = "retrysafe-purge:" + "a_schema_name_of_sixty_three_characters_xxxxxxxxxxxxxxxxxxxxxxx.";
        String one = common + "table_one";
        String two = common + "table_two";
        try (Connection first = ds.getConnection(); Connection second = ds.getConnection()) {
            assertThat(store.sql().maintenance().tryLock(first, one)).isTrue();
            assertThat(store.sql().maintenance().tryLock(second, one)).as("the same long name is the same lock").isFalse();
            assertThat(store.sql().maintenance().tryLock(second, two)).as("a long name differing past 64 characters").isTrue();
            store.sql().maintenance().unlock(first, one);
            store.sql().maintenance().unlock(second, two);
            assertThat(store.sql().maintenance().tryLock(second, one)).as("released").isTrue();
            store.sql().maintenance().unlock(second, one);
        }
    }

    @Test
    void anExpiredRecordIsAbsentBeforeThePurgeRemovesIt() throws SQLException {
        IdempotencyKey key = completed("old-1");
        expire(1);
        assertThat(store.inspect(key)).isEmpty();
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[] {2}), token, Duration.ofSeconds(5),
                Duration.ofHours(1)))).isEqualTo(new ClaimResult.Claimed(token, 1));
    }
}
