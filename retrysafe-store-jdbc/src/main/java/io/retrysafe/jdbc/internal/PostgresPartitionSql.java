package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.Postgres.T;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The partition maintenance of a {@link PostgresPartitionedLayout} table, run by
 * {@code PartitionMaintainer} and {@code JdbcPurger} under the purge lock: which day partitions exist,
 * creating a day (moving its rows out of the default partition) and dropping an expired one, and the
 * batches that purge the default partition.
 */
public final class PostgresPartitionSql {
    private static final DateTimeFormatter DAY = DateTimeFormatter.BASIC_ISO_DATE;

    private final String table;
    private final String schemaPrefix;
    private final String simple;
    private final String defaultPartition;
    private final String purgeDefaultSql;

    PostgresPartitionSql(String table) {
        this.table = table;
        int dot = table.indexOf('.');
        this.schemaPrefix = dot < 0 ? "" : table.substring(0, dot + 1);
        this.simple = table.substring(dot + 1);
        this.defaultPartition = table + "_pdefault";
        this.purgeDefaultSql = PostgresPartitionedLayout.purgeSql(defaultPartition);
    }

    /** Deletes at most {@code limit} expired rows of the default partition (days the job had not created). */
    public int purgeDefaultBatch(Connection c, int limit) throws SQLException {
        return MaintenanceSql.delete(c, purgeDefaultSql, limit);
    }

    /** Today in UTC by the database's clock. */
    public LocalDate today(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT (statement_timestamp() AT TIME ZONE 'UTC')::date")) {
            rs.next();
            return rs.getObject(1, LocalDate.class);
        }
    }

    /** The day partitions that exist (named {@code <name>_pYYYYMMDD}), by day; other partitions are not ours. */
    public NavigableMap<LocalDate, String> dayPartitions(Connection c) throws SQLException {
        NavigableMap<LocalDate, String> days = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT k.relname FROM pg_inherits i JOIN pg_class k"
                + " ON k.oid = i.inhrelid WHERE i.inhparent = to_regclass(?)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String name = rs.getString(1);
                    String prefix = simple + "_p";
                    if (name.length() == prefix.length() + 8 && name.startsWith(prefix)) {
                        try {
                            days.put(LocalDate.parse(name.substring(prefix.length()), DAY), schemaPrefix + name);
                        } catch (DateTimeParseException e) {
                            // not one of ours
                        }
                    }
                }
            }
        }
        return days;
    }

    /** The days (UTC) of live rows in the default partition: partitions the job still has to create. */
    public List<LocalDate> defaultDays(Connection c) throws SQLException {
        List<LocalDate> days = new ArrayList<>();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                "SELECT DISTINCT (expires_at AT TIME ZONE 'UTC')::date FROM " + defaultPartition
                        + " WHERE expires_at > " + T + " ORDER BY 1")) {
            while (rs.next()) {
                days.add(rs.getObject(1, LocalDate.class));
            }
        }
        return days;
    }

    /** Rows in the default partition, live or not: zero when the job keeps up. */
    public long defaultRows(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM " + defaultPartition)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * Expired rows per partition, by the partition's qualified name (as {@link #dayPartitions} and
     * {@link #partitionName} give it); partitions without an expired row are absent.
     */
    public Map<String, Long> expiredByPartition(Connection c) throws SQLException {
        Map<String, Long> expired = new HashMap<>();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT k.relname, x.n FROM (SELECT"
                + " tableoid AS part, count(*) AS n FROM " + table + " WHERE expires_at <= " + T + " GROUP BY tableoid) x"
                + " JOIN pg_class k ON k.oid = x.part")) {
            while (rs.next()) {
                expired.put(schemaPrefix + rs.getString(1), rs.getLong(2));
            }
        }
        return expired;
    }

    /** Whether {@code day}'s partition holds a row not yet expired; what keeps it from being dropped. */
    public boolean hasLiveRows(Connection c, LocalDate day) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT EXISTS (SELECT 1 FROM "
                + partitionName(day) + " WHERE expires_at > " + T + ")")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    public String defaultPartitionName() {
        return defaultPartition;
    }

    public String partitionName(LocalDate day) {
        return table + "_p" + DAY.format(day);
    }

    /**
     * Creates the partition of {@code day} in one transaction on {@code c} (auto-commit off), moving
     * into it the rows the default partition holds for that day. Returns the rows moved, or -1 if it
     * existed as a partition of the table. Waits at most {@code lockTimeout} for the table's lock (every claim in flight holds a
     * lock on it): past it, fails with SQLState 55P03 and changes nothing.
     */
    public long createDay(Connection c, LocalDate day, Duration lockTimeout) throws SQLException {
        String partition = partitionName(day);
        String range = " expires_at >= '" + day + " 00:00:00+00' AND expires_at < '" + day.plusDays(1) + " 00:00:00+00'";
        try (Statement st = c.createStatement()) {
            lockParent(st, lockTimeout);
            // A table of that name that is not our partition makes the CREATE below fail, and the run report it.
            if (dayPartitions(c).containsKey(day)) {
                c.rollback();
                return -1;
            }
            long moved;
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM " + defaultPartition + " WHERE" + range)) {
                rs.next();
                moved = rs.getLong(1);
            }
            if (moved > 0) {
                // PostgreSQL refuses a partition whose range the default partition still holds rows of.
                st.execute("CREATE TEMP TABLE retrysafe_moving ON COMMIT DROP AS SELECT * FROM " + defaultPartition
                        + " WHERE" + range);
                st.execute("DELETE FROM " + defaultPartition + " WHERE" + range);
            }
            st.execute("CREATE TABLE " + partition + " PARTITION OF " + table + " FOR VALUES FROM ('" + day
                    + " 00:00:00+00') TO ('" + day.plusDays(1) + " 00:00:00+00')");
            if (moved > 0) {
                st.execute("INSERT INTO " + table + " SELECT * FROM retrysafe_moving");
            }
            c.commit();
            return moved;
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        }
    }

    /**
     * Drops the partition of {@code day} if its whole range is past expiry by the database's clock
     * and, checked again under the table's lock, it holds no live row. True if dropped. Same lock
     * bound and transaction handling as {@link #createDay}.
     */
    public boolean dropDayIfExpired(Connection c, LocalDate day, Duration lockTimeout) throws SQLException {
        String partition = partitionName(day);
        try (Statement st = c.createStatement()) {
            lockParent(st, lockTimeout);
            boolean droppable = exists(c, partition);
            if (droppable) {
                try (ResultSet rs = st.executeQuery("SELECT " + T + " >= '" + day.plusDays(1)
                        + " 00:00:00+00'::timestamptz AND NOT EXISTS (SELECT 1 FROM " + partition
                        + " WHERE expires_at > " + T + ")")) {
                    rs.next();
                    droppable = rs.getBoolean(1);
                }
            }
            if (!droppable) {
                c.rollback();
                return false;
            }
            st.execute("DROP TABLE " + partition);
            c.commit();
            return true;
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        }
    }

    /**
     * Takes the partitioned table's lock first, before any partition's, in the order every claim
     * takes them: the DDL then never deadlocks with a claim, it only waits for those in flight.
     */
    private void lockParent(Statement st, Duration lockTimeout) throws SQLException {
        st.execute("SET LOCAL lock_timeout = " + Math.max(1, lockTimeout.toMillis()));
        st.execute("LOCK TABLE ONLY " + table + " IN ACCESS EXCLUSIVE MODE");
    }

    private static boolean exists(Connection c, String relation) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }
}
