package io.retrysafe.jdbc;

import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.internal.PostgresPartitionSql;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeSet;

/**
 * Keeps the partitions of a {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY} table: creates the
 * partitions of today and the next {@link #daysAhead()} days (UTC, by the database's clock), creates
 * the partition of any day the default partition holds live rows of and moves them into it, and drops
 * every day partition whose whole range is past expiry. It runs under the purge's cluster-wide lock,
 * so one instance at a time maintains a table and a purge never runs beside it; {@link JdbcPurger}
 * runs it at the start of every purge, and {@link PurgeScheduler} also when it starts.
 *
 * <pre>{@code
 * PartitionMaintainer.Report report = store.partitions().daysAhead(7).build().maintain();
 * }</pre>
 *
 * <p>Creating or dropping a partition takes the table's {@code ACCESS EXCLUSIVE} lock for a moment:
 * it waits for the transactions in flight on the table, and claims arriving meanwhile wait behind
 * it. The wait is bounded by {@link #ddlLockTimeout()}; past it that day is left for the next run
 * (a claim is never refused for want of a partition: the default partition takes its row).
 */
public final class PartitionMaintainer {
    public static final int DEFAULT_DAYS_AHEAD = 7;
    public static final Duration DEFAULT_DDL_LOCK_TIMEOUT = Duration.ofSeconds(1);

    private static final System.Logger LOG = System.getLogger(PartitionMaintainer.class.getName());

    private final JdbcIdempotencyStore store;
    private final int daysAhead;
    private final Duration ddlLockTimeout;

    private PartitionMaintainer(Builder b) {
        this.store = b.store;
        this.daysAhead = b.daysAhead == null ? DEFAULT_DAYS_AHEAD : b.daysAhead;
        this.ddlLockTimeout = b.ddlLockTimeout == null ? DEFAULT_DDL_LOCK_TIMEOUT : b.ddlLockTimeout;
    }

    static Builder builder(JdbcIdempotencyStore store) {
        return new Builder(store);
    }

    public JdbcIdempotencyStore store() {
        return store;
    }

    public int daysAhead() {
        return daysAhead;
    }

    public Duration ddlLockTimeout() {
        return ddlLockTimeout;
    }

    /**
     * One maintenance run under the purge lock. Returns at once, with {@code ran == false}, if another
     * instance holds it (purging or maintaining).
     */
    public Report maintain() {
        String lock = JdbcPurger.lockName(store);
        long start = System.nanoTime();
        try (Connection c = store.dataSource().getConnection()) {
            c.setAutoCommit(true);
            if (!store.sql().maintenance().tryLock(c, lock)) {
                LOG.log(Level.INFO, () -> "[" + store.name() + "] partition maintenance skipped: another instance holds "
                        + lock);
                return new Report(false, List.of(), List.of(), 0, List.of(), 0, Duration.ofNanos(System.nanoTime() - start));
            }
            try {
                return maintainLocked(c, start);
            } finally {
                c.setAutoCommit(true);
                store.sql().maintenance().unlock(c, lock);
            }
        } catch (SQLException e) {
            throw store.failure("maintain partitions", e);
        }
    }

    /** The run itself, on a connection holding the purge lock. Failures of one day are reported, not thrown. */
    Report maintainLocked(Connection c, long startNanos) throws SQLException {
        PostgresPartitionSql sql = store.sql().partitions();
        LocalDate today = sql.today(c);
        NavigableMap<LocalDate, String> existing = sql.dayPartitions(c);
        TreeSet<LocalDate> wanted = new TreeSet<>();
        for (int i = 0; i <= daysAhead; i++) {
            wanted.add(today.plusDays(i));
        }
        wanted.addAll(sql.defaultDays(c));
        wanted.removeAll(existing.keySet());

        List<String> created = new ArrayList<>();
        List<String> dropped = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        long moved = 0;
        c.setAutoCommit(false);
        for (LocalDate day : wanted) {
            try {
                long n = sql.createDay(c, day, ddlLockTimeout);
                if (n >= 0) {
                    created.add(sql.partitionName(day));
                    moved += n;
                }
            } catch (SQLException e) {
                failed.add("create " + sql.partitionName(day) + ": " + e.getMessage() + " (SQLState " + e.getSQLState() + ")");
            }
        }
        // A day is dropped only once the next has begun: its last row expired before that midnight.
        for (Map.Entry<LocalDate, String> day : existing.headMap(today, false).entrySet()) {
            try {
                if (sql.dropDayIfExpired(c, day.getKey(), ddlLockTimeout)) {
                    dropped.add(day.getValue());
                }
            } catch (SQLException e) {
                failed.add("drop " + day.getValue() + ": " + e.getMessage() + " (SQLState " + e.getSQLState() + ")");
            }
        }
        c.setAutoCommit(true);
        long defaultRows = sql.defaultRows(c);
        Report report = new Report(true, created, dropped, moved, failed, defaultRows,
                Duration.ofNanos(System.nanoTime() - startNanos));
        Level level = failed.isEmpty() ? Level.INFO : Level.WARNING;
        LOG.log(level, () -> "[" + store.name() + "] partitions: created " + created + ", dropped " + dropped
                + ", moved " + report.movedFromDefault() + " rows from the default partition, "
                + report.defaultPartitionRows() + " rows left there" + (failed.isEmpty() ? "" : ", failed " + failed)
                + ", " + report.took().toMillis() + " ms");
        return report;
    }

    /**
     * What a purge would remove now, counted without deleting or locking anything: the day partitions
     * the next run would drop (every day before today whose rows have all expired), the expired rows in
     * the default partition (deleted in batches), and the expired rows that stay because their
     * partition still holds live rows or its day is not over (today's). A row that expires between
     * this count and the run moves from one number to another; nothing else changes them.
     */
    public Preview preview() {
        try (Connection c = store.dataSource().getConnection()) {
            c.setAutoCommit(true);
            PostgresPartitionSql sql = store.sql().partitions();
            LocalDate today = sql.today(c);
            Map<String, Long> expired = sql.expiredByPartition(c);
            List<String> drop = new ArrayList<>();
            long inDropped = 0;
            for (Map.Entry<LocalDate, String> day : sql.dayPartitions(c).headMap(today, false).entrySet()) {
                if (!sql.hasLiveRows(c, day.getKey())) {
                    drop.add(day.getValue());
                    inDropped += expired.getOrDefault(day.getValue(), 0L);
                }
            }
            long inDefault = expired.getOrDefault(sql.defaultPartitionName(), 0L);
            long total = expired.values().stream().mapToLong(Long::longValue).sum();
            return new Preview(drop, inDropped, inDefault, total - inDropped - inDefault);
        } catch (SQLException e) {
            throw store.failure("count what a purge would remove", e);
        }
    }

    /**
     * What {@link #preview()} counted: {@code dropped} partitions holding {@code rowsInDropped} rows,
     * {@code expiredInDefault} rows the batches would delete, {@code expiredKept} expired rows left
     * for a later run.
     */
    public record Preview(List<String> dropped, long rowsInDropped, long expiredInDefault, long expiredKept) {
        public Preview {
            dropped = List.copyOf(dropped);
        }
    }

    /**
     * What one run did. {@code failed} names each partition the run could not create or drop and
     * why (mostly a lock wait past {@link #ddlLockTimeout()}); the next run tries again.
     * {@code defaultPartitionRows} is zero when the job keeps up: alert when it is not.
     */
    public record Report(boolean ran, List<String> created, List<String> dropped, long movedFromDefault,
            List<String> failed, long defaultPartitionRows, Duration took) {
        public Report {
            created = List.copyOf(created);
            dropped = List.copyOf(dropped);
            failed = List.copyOf(failed);
        }
    }

    /** Builds a {@link PartitionMaintainer}; each value may be set once. */
    public static final class Builder {
        private final JdbcIdempotencyStore store;
        private Integer daysAhead;
        private Duration ddlLockTimeout;

        private Builder(JdbcIdempotencyStore store) {
            this.store = store;
        }

        /**
         * Days after today whose partitions exist ahead of time. At least the longest retention in
         * days, so that no record starts out in the default partition; 0 to 3,650.
         */
        public Builder daysAhead(int daysAhead) {
            Require.unset(this.daysAhead, "daysAhead");
            this.daysAhead = Require.between(daysAhead, 0, 3_650, "daysAhead");
            return this;
        }

        /**
         * How long creating or dropping one partition waits for the table's lock. Claims arriving in
         * that time wait behind it, so keep it short; a day not done is done by the next run.
         */
        public Builder ddlLockTimeout(Duration ddlLockTimeout) {
            Require.unset(this.ddlLockTimeout, "ddlLockTimeout");
            this.ddlLockTimeout = Require.atLeastOneMilli(ddlLockTimeout, "ddlLockTimeout");
            return this;
        }

        public PartitionMaintainer build() {
            return new PartitionMaintainer(this);
        }
    }
}
