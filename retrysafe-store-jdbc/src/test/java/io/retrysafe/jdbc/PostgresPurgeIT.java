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
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The purge job on PostgreSQL: bounded batches, expired records only, one runner across instances. */
class PostgresPurgeIT {
    private DataSource ds;
    private JdbcIdempotencyStore store;
    private final Fingerprint fp = Fingerprint.sha256(new byte[] {1});

    @BeforeEach
    void freshTable() throws SQLException {
        ds = TestDatabases.postgres();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS rs_pg_purge_it");
        }
        store = JdbcIdempotencyStore.builder(ds).table("rs_pg_purge_it").build();
        store.createSchema();
    }

    private IdempotencyKey completed(String value, Duration retention) {
        IdempotencyKey key = IdempotencyKey.of("purge", value);
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, Duration.ofMillis(1), retention)))
                .isInstanceOf(ClaimResult.Claimed.class);
        store.complete(key, token, StoredResponse.of(201, new byte[] {42}), retention);
        return key;
    }

    /** Moves records into the past with the database's own clock, instead of waiting for them to expire. */
    private void expire(int count) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE rs_pg_purge_it SET expires_at = statement_timestamp() - interval '1 hour' WHERE idem_key IN ("
                        + "SELECT idem_key FROM rs_pg_purge_it WHERE idem_key LIKE 'old-%' ORDER BY idem_key LIMIT ?)")) {
            ps.setInt(1, count);
            ps.executeUpdate();
        }
    }

    private void expiredRecords(int count) throws SQLException {
        for (int i = 0; i < count; i++) {
            completed("old-" + i, Duration.ofHours(1));
        }
        expire(count);
    }

    private int rows() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM rs_pg_purge_it")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void deletesOnlyExpiredRecordsInBoundedBatches() throws SQLException {
        expiredRecords(25);
        IdempotencyKey live = completed("live", Duration.ofHours(1));

        PurgeResult result = store.purger().batchSize(10).build().purge();

        assertThat(result.ran()).isTrue();
        assertThat(result.finished()).isTrue();
        assertThat(result.deleted()).isEqualTo(25);
        assertThat(result.batches()).as("10 + 10 + 5, the short batch ends the run").isEqualTo(3);
        assertThat(rows()).isEqualTo(1);
        assertThat(store.inspect(live)).isPresent();
    }

    @Test
    void maxBatchesBoundsOneRunAndTheNextRunContinues() throws SQLException {
        for (int i = 0; i < 30; i++) {
            completed("old-" + i, Duration.ofHours(1));
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
    void anInterruptedRunStopsAfterTheBatchInFlightReleasesTheLockAndKeepsTheInterrupt() throws SQLException {
        expiredRecords(25);
        JdbcPurger purger = store.purger().batchSize(10).build();

        Thread.currentThread().interrupt();
        PurgeResult stopped;
        try {
            stopped = purger.purge();
        } finally {
            assertThat(Thread.interrupted()).as("the interrupt is kept for the caller").isTrue();
        }

        assertThat(stopped.ran()).isTrue();
        assertThat(stopped.finished()).as("interrupted with more to delete").isFalse();
        assertThat(stopped.batches()).as("the batch in flight, then no other").isEqualTo(1);
        assertThat(stopped.deleted()).isEqualTo(10);
        assertThat(purger.purge().deleted()).as("the lock was released: the next run continues").isEqualTo(15);
    }

    @Test
    void aPacedRunPausesInProportionToEachBatchAndDeletesExactlyTheExpiredRecords() throws SQLException {
        expiredRecords(25);
        IdempotencyKey live = completed("live", Duration.ofHours(1));
        // A batch followed by another is timed by two readings of the clock: 10 ms, then 30 ms. The short
        // last batch is read at its start only: no pause follows it.
        long ms = 1_000_000;
        Iterator<Long> clock = List.of(0L, 10 * ms, 100 * ms, 130 * ms, 500 * ms).iterator();
        List<Long> pauses = new ArrayList<>();
        JdbcPurger purger = store.purger().batchSize(10).maxDutyCycle(0.25).pacing(clock::next, pauses::add).build();

        PurgeResult result = purger.purge();

        assertThat(pauses).as("3 times each batch's time at a share of 1/4, none after the last batch")
                .containsExactly(30 * ms, 90 * ms);
        assertThat(clock.hasNext()).isFalse();
        assertThat(result.deleted()).isEqualTo(25);
        assertThat(result.batches()).isEqualTo(3);
        assertThat(rows()).isEqualTo(1);
        assertThat(store.inspect(live)).isPresent();
    }

    @Test
    void eachBatchStartsWhereTheLastEndedSoARowSkippedAsLockedIsLeftToTheNextRun() throws SQLException {
        completed("oldest", Duration.ofHours(1));
        for (int i = 0; i < 4; i++) {
            completed("old-" + i, Duration.ofHours(1));
        }
        expire(4);
        try (Connection locker = ds.getConnection(); Statement st = locker.createStatement()) {
            st.executeUpdate("UPDATE rs_pg_purge_it SET expires_at = statement_timestamp() - interval '2 hours'"
                    + " WHERE idem_key = 'oldest'");
            locker.setAutoCommit(false);
            st.executeQuery("SELECT 1 FROM rs_pg_purge_it WHERE idem_key = 'oldest' FOR UPDATE").close();
            long[] now = {0};
            // The oldest row is locked through the first batch, which skips it, and free from the first pause on.
            JdbcPurger purger = store.purger().batchSize(2).maxDutyCycle(0.5).pacing(() -> now[0] += 1_000_000,
                    pause -> commit(locker)).build();

            PurgeResult run = purger.purge();

            assertThat(run.deleted()).as("the four newer rows; the second batch starts past the oldest").isEqualTo(4);
            assertThat(run.finished()).isTrue();
            assertThat(rows()).as("the skipped row is still stored").isEqualTo(1);
        }
        assertThat(store.purger().build().purge().deleted()).as("the next run starts from the oldest").isEqualTo(1);
        assertThat(rows()).isZero();
    }

    private static void commit(Connection c) {
        try {
            c.commit();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void closingTheSchedulerDuringAPauseInterruptsItAndTheRunStops() throws Exception {
        expiredRecords(25);
        CountDownLatch pausing = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        JdbcPurger purger = store.purger().batchSize(10).maxDutyCycle(0.5).pacing(System::nanoTime, nanos -> {
            pausing.countDown();
            try {
                new CountDownLatch(1).await(); // a pause only an interrupt ends
            } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
            }
        }).build();
        // A clock a millisecond before the run's time: the first run starts at once.
        PurgeScheduler scheduler = PurgeScheduler.daily(purger, LocalTime.of(3, 0), ZoneOffset.UTC, run -> { },
                Clock.fixed(Instant.parse("2026-12-04T02:59:59.999Z"), ZoneOffset.UTC)).start();
        try {
            assertThat(pausing.await(30, TimeUnit.SECONDS)).as("the run pauses after its first batch").isTrue();
        } finally {
            scheduler.close();
        }

        assertThat(interrupted.getCount()).as("close() interrupted the pause").isZero();
        PurgeResult next = store.purger().build().purge();
        assertThat(next.ran()).as("close() returned after the run let go of its lock").isTrue();
        assertThat(next.deleted()).as("the stopped run deleted its first batch only").isEqualTo(15);
    }

    @Test
    void theSchedulerHandsEachRunsResultOnAndGoesOnWhenThatThrows() throws Exception {
        expiredRecords(25);
        BlockingQueue<PurgeResult> runs = new LinkedBlockingQueue<>();
        // A fixed clock a millisecond before the run's time: every run is due at once, one after another.
        PurgeScheduler scheduler = PurgeScheduler.daily(store.purger().batchSize(10).build(), LocalTime.of(3, 0),
                ZoneOffset.UTC, run -> {
                    runs.add(run);
                    throw new IllegalStateException("a meter registry that fails");
                }, Clock.fixed(Instant.parse("2026-12-04T02:59:59.999Z"), ZoneOffset.UTC)).start();
        PurgeResult first;
        PurgeResult second;
        try {
            first = runs.poll(30, TimeUnit.SECONDS);
            second = runs.poll(30, TimeUnit.SECONDS);
        } finally {
            scheduler.close();
        }

        assertThat(first).as("the first run's result").isNotNull();
        assertThat(first.deleted()).isEqualTo(25);
        assertThat(first.batches()).as("batches of 10: 10, 10, 5").isEqualTo(3);
        assertThat(first.finished()).isTrue();
        assertThat(second).as("the next run happened, though the first's listener threw").isNotNull();
        assertThat(second.deleted()).isZero();
        assertThat(rows()).isZero();
    }

    @Test
    void aSecondInstanceSkipsWhileTheFirstHoldsThePurgeLock() throws SQLException {
        completed("old-1", Duration.ofHours(1));
        expire(1);
        JdbcPurger purger = store.purger().build();
        try (Connection other = ds.getConnection()) {
            assertThat(store.sql().maintenance().tryLock(other, "retrysafe-purge:rs_pg_purge_it")).isTrue();
            PurgeResult skipped = purger.purge();
            assertThat(skipped.ran()).isFalse();
            assertThat(skipped.finished()).isFalse();
            assertThat(skipped.deleted()).isZero();
            assertThat(rows()).isEqualTo(1);
            store.sql().maintenance().unlock(other, "retrysafe-purge:rs_pg_purge_it");
        }
        assertThat(purger.purge().deleted()).isEqualTo(1);
    }

    @Test
    void anExpiredRecordIsAbsentBeforeThePurgeRemovesIt() throws SQLException {
        IdempotencyKey key = completed("old-1", Duration.ofHours(1));
        expire(1);
        assertThat(store.inspect(key)).isEmpty();
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[] {2}), token, Duration.ofSeconds(5),
                Duration.ofHours(1)))).isEqualTo(new ClaimResult.Claimed(token, 1));
    }

    @Test
    void createSchemaIsSafeToRepeatAndTheTableNameIsChecked() {
        store.createSchema();
        store.createSchema();
        org.assertj.core.api.Assertions.assertThatThrownBy(
                () -> JdbcIdempotencyStore.builder(ds).table("records; DROP TABLE x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was \"records; DROP TABLE x\"");
        assertThat(JdbcIdempotencyStore.builder(ds).table("public.rs_" + UUID.randomUUID().toString().replace("-", "_"))
                .build().table()).startsWith("public.rs_");
    }
}
