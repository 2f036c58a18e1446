package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.Postgres.T;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import io.retrysafe.sql.Schema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;

/**
 * The table partitioned by expiry day (UTC). There is no unique index on (scope, key): PostgreSQL
 * allows one on a partitioned table only with the partition key in it, and a key's expiry day moves
 * when it is retried or completed. Instead every write to a key goes through a function of the schema
 * ({@code <table>_claim}, {@code _complete}, {@code _release}, {@code _force_release}) that first takes
 * {@code pg_advisory_xact_lock} on a hash of (table, scope, key), held to commit, then looks the key up
 * in every partition and inserts or updates. Writers of one key are therefore serialised exactly as the
 * primary key serialises them in the standard layout (a concurrent duplicate waits for the holder's
 * commit, bounded by the same {@code lock_timeout}), and each of their statements sees what the
 * previous holder committed. A completion or takeover that moves the row to a later day's partition
 * does so under that lock; readers see one version or the other.
 *
 * <p>Partitions are named {@code <name>_pYYYYMMDD} and hold {@code [day, day + 1)} in UTC; rows of a
 * day not created yet go to {@code <table>_pdefault}. {@link #partitions()} creates and drops them.
 */
public final class PostgresPartitionedLayout implements PostgresLayout {
    private final String table;
    private final PostgresPartitionSql partitions;
    private final String claimSql;
    private final String claimAloneSql;
    private final String completeSql;
    private final String releaseSql;
    private final String forceReleaseSql;
    private final String purgeSql;

    public PostgresPartitionedLayout(String table) {
        this.table = table;
        this.partitions = new PostgresPartitionSql(table);
        // As in the standard layout, the bound applies to the claim alone (SET LOCAL, restored after);
        // here it bounds the wait for the key's advisory lock. Three statements, one round trip.
        // A claim that is its own transaction leaves the bound to end with it: two statements.
        claimAloneSql = new PostgresSqlText(table, BindMarkers.QUESTION_MARKS).setLockTimeout() + ";"
                + "SELECT * FROM " + table + "_claim(?::varchar, ?::varchar, ?::bytea, ?::uuid, ?::bigint, ?::bigint)";
        claimSql = claimAloneSql + ";" + PostgresSqlText.RESTORE_LOCK_TIMEOUT;
        completeSql = "SELECT " + table + "_complete(?::varchar, ?::varchar, ?::uuid, ?::bigint, ?::smallint, ?::text,"
                + " ?::bytea, ?::boolean)";
        releaseSql = "SELECT " + table + "_release(?::varchar, ?::varchar, ?::uuid)";
        forceReleaseSql = "SELECT set_config('lock_timeout', ?, true);"
                + "SELECT " + table + "_force_release(?::varchar, ?::varchar, ?::integer)";
        purgeSql = purgeSql(table);
    }

    /**
     * Row deletes, for purgeExpired(limit) and the default partition; whole days are dropped instead.
     * The outer condition repeats the expiry: a key is matched only in the row this statement locked.
     */
    static String purgeSql(String relation) {
        return "DELETE FROM " + relation + " WHERE expires_at <= " + T + " AND (scope, idem_key) IN (SELECT scope, idem_key"
                + " FROM " + relation + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
    }

    /** The partition maintenance of this table. */
    public PostgresPartitionSql partitions() {
        return partitions;
    }

    @Override
    public Schema schema() {
        return Schema.POSTGRESQL_PARTITIONED;
    }

    /**
     * The claim function carries ClaimDecision's takeover in PL/pgSQL: the takeover must happen under
     * the key's lock, in the function's one round trip. When it does not claim, it returns the live record
     * it found, and ClaimDecision answers from it.
     */
    @Override
    public Claim claim(Connection c, ClaimRequest request, Duration lockTimeout, boolean inTransaction)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(inTransaction ? claimSql : claimAloneSql);
                ResultSet rs = Postgres.runClaim(ps, request, lockTimeout, "function")) {
            if (!rs.next()) {
                throw new SQLException("claim function returned no row");
            }
            int attempt = rs.getInt(1);
            return rs.wasNull() ? Claim.notClaimed(Rows.found(rs, 2, false)) : Claim.claimed(attempt);
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

    /** No unique index to make a second insert of a key fail: every write goes through the key's lock. */
    @Override
    public boolean hasUniqueKey() {
        return false;
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(forceReleaseSql)) {
            ps.setString(1, PostgresSqlText.lockTimeout(lockTimeout));
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

    @Override
    public String purgeSql() {
        return purgeSql;
    }
}
