package io.retrysafe.jdbc.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.NavigableMap;

/**
 * PostgreSQL, the table partitioned by expiry day (UTC). There is no unique index on (scope, key):
 * PostgreSQL allows one on a partitioned table only with the partition key in it, and a key's expiry
 * day moves when it is retried or completed. Instead every write to a key goes through a function of
 * the schema ({@code <table>_claim}, {@code _complete}, {@code _release}, {@code _force_release}) that
 * first takes {@code pg_advisory_xact_lock} on a hash of (table, scope, key), held to commit, then
 * looks the key up in every partition and inserts or updates. Writers of one key are therefore
 * serialised exactly as the primary key serialises them in the standard layout (a concurrent
 * duplicate waits for the holder's commit, bounded by the same {@code lock_timeout}), and each of
 * their statements sees what the previous holder committed. A completion or takeover that moves the
 * row to a later day's partition does so under that lock; readers see one version or the other.
 *
 * <p>Partitions are named {@code <name>_pYYYYMMDD} and hold {@code [day, day + 1)} in UTC; rows of a
 * day not created yet go to {@code <table>_pdefault}. The maintenance statements below are run by
 * {@code PartitionMaintainer} under the purge lock.
 */
public final class PostgresPartitionedSqlDialect extends PostgresSqlDialect {
    private static final DateTimeFormatter DAY = DateTimeFormatter.BASIC_ISO_DATE;

    private final String schemaPrefix;
    private final String simple;
    private final String defaultPartition;
    private final String claimSql;
    private final String completeSql;
    private final String releaseSql;
    private final String forceReleaseSql;
    private final String purgeSql;
    private final String purgeDefaultSql;

    public PostgresPartitionedSqlDialect(String table) {
        super(table, "/io/retrysafe/jdbc/schema-postgresql-partitioned.sql");
        int dot = table.indexOf('.');
        this.schemaPrefix = dot < 0 ? "" : table.substring(0, dot + 1);
        this.simple = table.substring(dot + 1);
        this.defaultPartition = table + "_pdefault";
        // As in the standard layout, the bound applies to the claim alone (SET LOCAL, restored after);
        // here it bounds the wait for the key's advisory lock. Three statements, one round trip.
        claimSql = "SELECT set_config('retrysafe.saved_lock_timeout', current_setting('lock_timeout'), true),"
                + " set_config('lock_timeout', ?, true);"
                + "SELECT * FROM " + table + "_claim(?::varchar, ?::varchar, ?::bytea, ?::uuid, ?::bigint, ?::bigint);"
                + "SELECT set_config('lock_timeout', current_setting('retrysafe.saved_lock_timeout'), true)";
        completeSql = "SELECT " + table + "_complete(?::varchar, ?::varchar, ?::uuid, ?::bigint, ?::smallint, ?::text,"
                + " ?::bytea, ?::boolean)";
        releaseSql = "SELECT " + table + "_release(?::varchar, ?::varchar, ?::uuid)";
        forceReleaseSql = "SELECT set_config('lock_timeout', ?, true);"
                + "SELECT " + table + "_force_release(?::varchar, ?::varchar, ?::integer)";
        // Row deletes, for purgeExpired(limit) and the default partition; whole days are dropped instead.
        // The outer condition repeats the expiry: a key is matched only in the row this statement locked.
        purgeSql = purgeSql(table);
        purgeDefaultSql = purgeSql(defaultPartition);
    }

    private static String purgeSql(String relation) {
        return "DELETE FROM " + relation + " WHERE expires_at <= " + T + " AND (scope, idem_key) IN (SELECT scope, idem_key"
                + " FROM " + relation + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(claimSql)) {
            ps.setString(1, Long.toString(Math.max(1, lockTimeout.toMillis())));
            ps.setString(2, request.key().scope());
            ps.setString(3, request.key().value());
            ps.setBytes(4, request.fingerprint().bytes());
            ps.setObject(5, request.token().value());
            ps.setLong(6, request.leaseTtl().toMillis());
            ps.setLong(7, request.retention().toMillis());
            ps.execute(); // first result: set_config
            if (!ps.getMoreResults()) {
                throw new SQLException("claim statement returned no result for its function");
            }
            try (ResultSet rs = ps.getResultSet()) {
                if (!rs.next()) {
                    throw new SQLException("claim function returned no row");
                }
                int attempt = rs.getInt(1);
                if (!rs.wasNull()) {
                    return new ClaimResult.Claimed(request.token(), attempt);
                }
                if (!Fingerprint.of(rs.getBytes(2)).matches(request.fingerprint())) {
                    return new ClaimResult.FingerprintMismatch();
                }
                RecordStatus status = RecordStatus.valueOf(rs.getString(3));
                if (status == RecordStatus.COMPLETED) {
                    return new ClaimResult.Replay(StoredResponse.of(rs.getInt(4), HeaderCodec.decode(rs.getString(5)),
                            rs.getBytes(6)));
                }
                // The function takes over a FAILED record or an expired lease of the same request itself,
                // so what is left is a live lease.
                return new ClaimResult.InProgress(Duration.ofMillis(Math.max(0, rs.getLong(7))));
            }
        } catch (SQLException e) {
            if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                throw e;
            }
            // The key's holder kept its transaction open past the bound. PostgreSQL aborted ours: undo the claim.
            undoAbortedClaim(c, undo);
            return new ClaimResult.InProgress(lockTimeout);
        }
    }

    @Override
    public boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(commit ? completeSql + ";COMMIT" : completeSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            ps.setObject(3, token.value());
            ps.setLong(4, retention.toMillis());
            ps.setInt(5, response.status());
            ps.setString(6, HeaderCodec.encode(response.headers()));
            ps.setBytes(7, response.body());
            ps.setBoolean(8, commit);
            return firstBoolean(ps);
        }
    }

    @Override
    public boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            ps.setObject(3, token.value());
            return firstBoolean(ps);
        }
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(forceReleaseSql)) {
            ps.setString(1, Long.toString(Math.max(1, lockTimeout.toMillis())));
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            if (attempt == null) {
                ps.setNull(4, Types.INTEGER);
            } else {
                ps.setInt(4, attempt);
            }
            ps.execute(); // first result: set_config
            if (!ps.getMoreResults()) {
                throw new SQLException("release statement returned no result for its function");
            }
            try (ResultSet rs = ps.getResultSet()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    private static boolean firstBoolean(PreparedStatement ps) throws SQLException {
        if (!ps.execute()) {
            throw new SQLException("function call returned no result");
        }
        try (ResultSet rs = ps.getResultSet()) {
            return rs.next() && rs.getBoolean(1);
        }
    }

    @Override
    public int purgeBatch(Connection c, int limit) throws SQLException {
        return delete(c, purgeSql, limit);
    }

    /** Deletes at most {@code limit} expired rows of the default partition (days the job had not created). */
    public int purgeDefaultBatch(Connection c, int limit) throws SQLException {
        return delete(c, purgeDefaultSql, limit);
    }

    private static int delete(Connection c, String sql, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, limit);
            return ps.executeUpdate();
        }
    }

    @Override
    public long tableBytes(Connection c) throws SQLException {
        // A partitioned table has no storage of its own: its partitions, with their indexes and TOAST data.
        try (PreparedStatement ps = c.prepareStatement("SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)"
                + " FROM pg_inherits WHERE inhparent = to_regclass(?)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    // ---------------------------------------------------------------- maintenance (PartitionMaintainer)

    /** Today in UTC by the database's clock. */
    /**
     * No unique index to make a second insert of a key fail: every write goes through the key's lock.
     * {@code TransactionalRetrySafe} refuses the key-last mode on this dialect, so the inherited
     * key-last statements are never run here.
     */
    @Override
    public boolean supportsKeyLast() {
        return false;
    }

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
