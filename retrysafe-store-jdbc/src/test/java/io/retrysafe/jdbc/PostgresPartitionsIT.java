package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.internal.PostgresPartitionSql;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The partitioned layout's maintenance job and the uniqueness of a key across day partitions, on
 * PostgreSQL. Days in the past are made with test-only SQL (partitions created for past days, rows
 * inserted with their expiry there); "today" is always the database's.
 */
class PostgresPartitionsIT {
    private static final String TABLE = "rs_pg_partitions_it";
    private static final Duration RACE_TIMEOUT = Duration.ofSeconds(120);
    private static HikariDataSource pool;

    private JdbcIdempotencyStore store;
    private PostgresPartitionSql sql;
    private LocalDate today;
    private final Fingerprint fp = Fingerprint.sha256(new byte[] {1});

    @BeforeAll
    static void openPool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(40);
        config.setPoolName("pg-partitions-it");
        pool = new HikariDataSource(config);
    }

    @AfterAll
    static void closePool() {
        pool.close();
    }

    @BeforeEach
    void freshTable() throws SQLException {
        exec("DROP TABLE IF EXISTS " + TABLE);
        exec("DROP TABLE IF EXISTS " + TABLE + "_p" + java.time.format.DateTimeFormatter.BASIC_ISO_DATE.format(
                LocalDate.now(java.time.ZoneOffset.UTC).minusDays(2))); // left detached by an interrupted run
        store = JdbcIdempotencyStore.builder(pool).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).table(TABLE)
                .lockTimeout(Duration.ofSeconds(5)).build();
        store.createSchema();
        sql = store.sql().partitions();
        try (Connection c = pool.getConnection()) {
            today = sql.today(c);
        }
    }

    // ------------------------------------------------------------------------------------------ the job

    @Test
    void createsTodayAndTheDaysAheadOnceAndRowsLandInTheirDay() throws SQLException {
        PartitionMaintainer maintainer = store.partitions().daysAhead(3).build();

        PartitionMaintainer.Report first = maintainer.maintain();

        assertThat(first.ran()).isTrue();
        assertThat(first.failed()).isEmpty();
        assertThat(first.created()).containsExactly(part(0), part(1), part(2), part(3));
        assertThat(maintainer.maintain().created()).as("a second run").isEmpty();
        IdempotencyKey key = completed("k", Duration.ofDays(2));
        assertThat(partitionOf(key)).as("partition of a record that expires in two days")
                .isIn(part(2), part(3)); // part(3) if the two days cross midnight
        assertThat(defaultRows()).isZero();
    }

    @Test
    void aDayNotCreatedYetLandsInTheDefaultPartitionAndTheJobMovesItIntoItsDay() throws SQLException {
        store.partitions().daysAhead(1).build().maintain();
        IdempotencyKey far = completed("far", Duration.ofDays(20));
        assertThat(partitionOf(far)).as("a record past the days created").isEqualTo(TABLE + "_pdefault");

        PartitionMaintainer.Report report = store.partitions().daysAhead(1).build().maintain();

        assertThat(report.movedFromDefault()).isEqualTo(1);
        assertThat(report.defaultPartitionRows()).isZero();
        assertThat(partitionOf(far)).isIn(part(20), part(21));
        assertThat(store.tryClaim(request(far, Duration.ofHours(1)))).as("a retry after the move")
                .isEqualTo(new ClaimResult.Replay(response()));
    }

    @Test
    void dropsOnlyPartitionsWhoseWholeRangeIsPastExpiry() throws SQLException {
        store.partitions().daysAhead(1).build().maintain();
        createPastDay(3);
        createPastDay(1);
        insertExpired(3, 1_000);
        insertExpired(1, 1_000);
        // Today's partition: a record that expired an hour ago beside a live one. Not droppable before midnight.
        completed("earlier", Duration.ofHours(2));
        exec("UPDATE " + TABLE + " SET expires_at = statement_timestamp() - interval '1 hour' WHERE idem_key = 'earlier'"
                + " AND statement_timestamp() - interval '1 hour' >= '" + today + " 00:00:00+00'");
        IdempotencyKey live = completed("live", Duration.ofHours(1));

        JdbcPurger purger = store.purger().build();
        PurgeResult result = purger.purge();

        assertThat(result.partitions().dropped()).containsExactlyInAnyOrder(past(3), past(1));
        assertThat(result.deleted()).as("rows deleted one by one").isZero();
        assertThat(partitions()).doesNotContain(past(3), past(1)).contains(part(0), part(1));
        assertThat(store.tryClaim(request(live, Duration.ofHours(1)))).isEqualTo(new ClaimResult.Replay(response()));
        assertThat(rows("idem_key = 'earlier'")).as("an expired record of today, kept until its day is over").isOne();
        assertThat(purger.purge().partitions().dropped()).as("a second purge").isEmpty();
    }

    @Test
    void theDropChecksForLiveRowsUnderItsLockWhateverTheDay() throws SQLException {
        createPastDay(2);
        // Test-only: PostgreSQL keeps a live row out of a past day's partition by its bound, so the guard
        // is checked on the day's table detached, where a live row can be put.
        exec("ALTER TABLE " + TABLE + " DETACH PARTITION " + past(2));
        exec("INSERT INTO " + past(2) + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, expires_at) VALUES ('s', 'odd', '\\x01', 'COMPLETED', gen_random_uuid(), 1, now(),"
                + " now(), now() + interval '1 hour')");

        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            assertThat(sql.dropDayIfExpired(c, today.minusDays(2), Duration.ofSeconds(1)))
                    .as("drop of a past day holding a live row").isFalse();
            assertThat(sql.dropDayIfExpired(c, today, Duration.ofSeconds(1))).as("drop of today").isFalse();
            assertThat(exists(past(2))).isTrue();
        } finally {
            exec("DROP TABLE IF EXISTS " + past(2));
        }
    }

    @Test
    void twoMaintainersAtOnceDoEachDayOnce() throws Exception {
        createPastDay(2);
        insertExpired(2, 100);
        List<Callable<PartitionMaintainer.Report>> tasks = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            tasks.add(() -> store.partitions().daysAhead(5).build().maintain());
        }

        List<PartitionMaintainer.Report> reports = concurrently(tasks);

        List<String> created = new ArrayList<>();
        List<String> dropped = new ArrayList<>();
        for (PartitionMaintainer.Report r : reports) {
            assertThat(r.failed()).isEmpty();
            created.addAll(r.created());
            dropped.addAll(r.dropped());
        }
        assertThat(created).containsExactlyInAnyOrder(part(0), part(1), part(2), part(3), part(4), part(5));
        assertThat(dropped).containsExactly(past(2));
        assertThat(reports.stream().filter(PartitionMaintainer.Report::ran)).as("runs that held the lock").isNotEmpty();
    }

    /**
     * Claims, completions that move rows to later days (some into the default partition), retries and
     * two maintainers creating, draining and dropping partitions, all at once: every key ends with one
     * record that replays its own response.
     */
    @Test
    void maintenanceRacingClaimsAndCompletionsLosesNoRecordAndMakesNoDuplicate() throws Exception {
        store.partitions().daysAhead(1).build().maintain();
        createPastDay(2);
        createPastDay(1);
        insertExpired(2, 2_000);
        insertExpired(1, 2_000);
        int workers = 8;
        CountDownLatch working = new CountDownLatch(workers);
        int keysEach = 60;
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            int worker = w;
            tasks.add(() -> {
                try {
                    for (int i = 0; i < keysEach; i++) {
                        IdempotencyKey key = IdempotencyKey.of("race", worker + "-" + i);
                        ClaimResult claim = store.tryClaim(request(key, Duration.ofMinutes(30)));
                        assertThat(claim).isInstanceOf(ClaimResult.Claimed.class);
                        // 2 to 31 days: most land in the default partition until a maintainer creates their day.
                        Duration retention = Duration.ofDays(2 + (worker * keysEach + i) % 30);
                        assertThat(store.complete(key, ((ClaimResult.Claimed) claim).token(), response(key), retention))
                                .isEqualTo(FencedWrite.COMMITTED);
                        assertThat(store.tryClaim(request(key, Duration.ofMinutes(30))))
                                .isEqualTo(new ClaimResult.Replay(response(key)));
                    }
                    return 0;
                } finally {
                    working.countDown();
                }
            });
        }
        List<Integer> runs = new ArrayList<>();
        for (int m = 0; m < 2; m++) {
            tasks.add(() -> {
                int ran = 0;
                while (working.getCount() > 0) {
                    PartitionMaintainer.Report r = store.partitions().daysAhead(1).build().maintain();
                    assertThat(r.failed()).isEmpty();
                    ran += r.ran() ? 1 : 0;
                }
                return ran;
            });
        }

        runs.addAll(concurrently(tasks));
        store.partitions().daysAhead(1).build().maintain();

        assertThat(runs.subList(workers, workers + 2).stream().mapToInt(Integer::intValue).sum())
                .as("maintenance runs during the race").isPositive();
        assertThat(rows("scope = 'race'")).isEqualTo(workers * keysEach);
        assertThat(duplicates()).isZero();
        assertThat(partitions()).doesNotContain(past(2), past(1));
        assertThat(defaultRows()).isZero();
        for (int w = 0; w < workers; w++) {
            for (int i = 0; i < keysEach; i++) {
                IdempotencyKey key = IdempotencyKey.of("race", w + "-" + i);
                assertThat(store.tryClaim(request(key, Duration.ofMinutes(30))))
                        .isEqualTo(new ClaimResult.Replay(response(key)));
            }
        }
    }

    // ------------------------------------------------------------------------------------------ one key, many days

    @Test
    void aKeyRetriedOnALaterDayReplaysFromTheEarlierDaysPartition() throws SQLException {
        store.partitions().daysAhead(3).build().maintain();
        IdempotencyKey key = completed("across", Duration.ofDays(3));
        String before = partitionOf(key);

        // The retry comes a day later, with a retention that would put a new record in another day.
        ClaimResult retry = store.tryClaim(request(key, Duration.ofMinutes(1)));

        assertThat(retry).isEqualTo(new ClaimResult.Replay(response()));
        assertThat(partitionOf(key)).isEqualTo(before).isNotIn(part(0));
        assertThat(rows("idem_key = 'across'")).isOne();
    }

    @Test
    void anExpiredRecordInAPastDayIsTakenOverIntoTodayAndLeavesNoCopy() throws SQLException {
        store.partitions().daysAhead(1).build().maintain();
        createPastDay(1);
        exec("INSERT INTO " + TABLE + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, expires_at, completed_at, response_status, response_headers, response_body)"
                + " VALUES ('t', 'old', '\\x" + hex(fp.bytes()) + "', 'COMPLETED', gen_random_uuid(), 1,"
                + " '" + today.minusDays(2) + " 12:00:00+00', '" + today.minusDays(2) + " 12:00:00+00',"
                + " '" + today.minusDays(1) + " 12:00:00+00', '" + today.minusDays(2) + " 12:00:00+00', 200, '', '\\x00')");
        IdempotencyKey key = IdempotencyKey.of("t", "old");

        ClaimResult claim = store.tryClaim(request(key, Duration.ofMinutes(30)));

        assertThat(claim).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(((ClaimResult.Claimed) claim).attempt()).as("attempt of a claim of an expired key").isEqualTo(1);
        assertThat(rows("idem_key = 'old'")).isOne();
        assertThat(partitionOf(key)).isIn(part(0), part(1));
        assertThat(store.purger().build().purge().partitions().dropped()).containsExactly(past(1));
        assertThat(store.complete(key, ((ClaimResult.Claimed) claim).token(), response(), Duration.ofHours(1)))
                .isEqualTo(FencedWrite.COMMITTED);
    }

    /** 32 claims of a released key whose record sits in a later day than any of them would write: one wins. */
    @Test
    void concurrentClaimsOfAKeyHeldInAnotherDayHaveOneWinner() throws Exception {
        store.partitions().daysAhead(3).build().maintain();
        IdempotencyKey key = IdempotencyKey.of("r", "released");
        ClaimResult first = store.tryClaim(request(key, Duration.ofDays(3)));
        assertThat(store.release(key, ((ClaimResult.Claimed) first).token())).isEqualTo(FencedWrite.COMMITTED);
        List<Callable<ClaimResult>> tasks = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            tasks.add(() -> store.tryClaim(new ClaimRequest(key, fp, OwnerToken.random(), Duration.ofMinutes(5),
                    Duration.ofMinutes(1))));
        }

        List<ClaimResult> results = concurrently(tasks);

        assertThat(results.stream().filter(r -> r instanceof ClaimResult.Claimed)).hasSize(1);
        assertThat(results.stream().filter(r -> r instanceof ClaimResult.InProgress)).hasSize(31);
        assertThat(rows("idem_key = 'released'")).isOne();
    }

    @Test
    void operatorsReleaseStatsAndBuilderChecksWorkOnThePartitionedTable() throws SQLException {
        store.partitions().daysAhead(1).build().maintain();
        IdempotencyKey stuck = IdempotencyKey.of("s", "stuck");
        assertThat(store.tryClaim(request(stuck, Duration.ofHours(1)))).isInstanceOf(ClaimResult.Claimed.class);
        JdbcAdmin admin = JdbcAdmin.of(store);

        assertThat(admin.release("s", "stuck", 2)).as("release of another attempt").isFalse();
        assertThat(admin.release("s", "stuck", 1)).isTrue();

        ClaimResult retry = store.tryClaim(request(stuck, Duration.ofHours(1)));
        assertThat(retry).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(((ClaimResult.Claimed) retry).attempt()).isEqualTo(2);
        assertThat(admin.stats().tableBytes()).as("size of the partitions").isPositive();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> JdbcIdempotencyStore.builder(pool)
                        .dialect(JdbcDialect.MARIADB).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs PostgreSQL");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> JdbcIdempotencyStore.builder(pool)
                        .layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).table("t".repeat(50)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 49 characters");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> JdbcIdempotencyStore.builder(pool).build().partitions())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("layout STANDARD");
    }

    // ------------------------------------------------------------------------------------------ helpers

    private ClaimRequest request(IdempotencyKey key, Duration retention) {
        return new ClaimRequest(key, fp, OwnerToken.random(), Duration.ofMinutes(5), retention);
    }

    private static StoredResponse response() {
        return StoredResponse.of(201, new byte[] {42});
    }

    private static StoredResponse response(IdempotencyKey key) {
        return StoredResponse.of(201, key.value().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    private IdempotencyKey completed(String value, Duration retention) {
        IdempotencyKey key = IdempotencyKey.of("s", value);
        ClaimResult claim = store.tryClaim(request(key, Duration.ofMinutes(30)));
        assertThat(claim).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(store.complete(key, ((ClaimResult.Claimed) claim).token(), response(), retention))
                .isEqualTo(FencedWrite.COMMITTED);
        return key;
    }

    private String part(int daysFromToday) {
        return sql.partitionName(today.plusDays(daysFromToday));
    }

    private String past(int daysAgo) {
        return sql.partitionName(today.minusDays(daysAgo));
    }

    private void createPastDay(int daysAgo) throws SQLException {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            sql.createDay(c, today.minusDays(daysAgo), Duration.ofSeconds(5));
        }
    }

    /** Test-only rows with their expiry at noon of a past day. */
    private void insertExpired(int daysAgo, int count) throws SQLException {
        exec("INSERT INTO " + TABLE + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, expires_at) SELECT 'old', 'd" + daysAgo + "-' || g, '\\x01', 'COMPLETED',"
                + " gen_random_uuid(), 1, e - interval '1 day', e - interval '1 day', e FROM generate_series(1, " + count
                + ") g, (SELECT '" + today.minusDays(daysAgo) + " 12:00:00+00'::timestamptz AS e) t");
    }

    private String partitionOf(IdempotencyKey key) throws SQLException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT tableoid::regclass::text FROM " + TABLE + " WHERE scope = ? AND idem_key = ?")) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("a row for %s", key.value()).isTrue();
                String p = rs.getString(1);
                assertThat(rs.next()).as("a second row for %s", key.value()).isFalse();
                return p;
            }
        }
    }

    private List<String> partitions() throws SQLException {
        try (Connection c = pool.getConnection()) {
            return new ArrayList<>(sql.dayPartitions(c).values());
        }
    }

    private long defaultRows() throws SQLException {
        try (Connection c = pool.getConnection()) {
            return sql.defaultRows(c);
        }
    }

    private long duplicates() throws SQLException {
        return query("SELECT count(*) FROM (SELECT scope, idem_key FROM " + TABLE
                + " GROUP BY scope, idem_key HAVING count(*) > 1) d");
    }

    private long rows(String where) throws SQLException {
        return query("SELECT count(*) FROM " + TABLE + " WHERE " + where);
    }

    private boolean exists(String relation) throws SQLException {
        return query("SELECT count(*) FROM pg_class WHERE oid = to_regclass('" + relation + "')") == 1;
    }

    private long query(String q) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(q)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void exec(String statement) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute(statement);
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    private static <T> List<T> concurrently(List<Callable<T>> tasks) throws Exception {
        ExecutorService executor = Executors.newFixedThreadPool(tasks.size());
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<T>> futures = new ArrayList<>();
            for (Callable<T> task : tasks) {
                futures.add(executor.submit(() -> {
                    start.await();
                    return task.call();
                }));
            }
            start.countDown();
            List<T> results = new ArrayList<>();
            long deadline = System.nanoTime() + RACE_TIMEOUT.toNanos();
            for (Future<T> f : futures) {
                results.add(f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
            }
            return results;
        } finally {
            executor.shutdownNow();
        }
    }
}
