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
import java.time.Duration;

/**
 * One table with {@code PRIMARY KEY (scope, idem_key)}. The claim is one {@code INSERT … ON CONFLICT
 * DO UPDATE … WHERE}: it inserts an absent key, or takes over an expired record, a released one or one
 * whose lease expired, and otherwise changes nothing. A concurrent claim of the same key waits on the
 * unique index for the first transaction to end, so the decision is the database's, never a read
 * followed by a write.
 */
public final class PostgresStandardLayout implements PostgresLayout {
    private final String table;
    private final String claimSql;
    private final String claimAloneSql;
    private final String completeSql;
    private final String completeAndCommitSql;
    private final String releaseSql;
    private final String purgeSql;
    private final String purgeFromSql;

    public PostgresStandardLayout(String table) {
        this.table = table;
        // The statements the R2DBC store sends too are written once, in PostgresSqlText.
        PostgresSqlText text = new PostgresSqlText(table, BindMarkers.QUESTION_MARKS);
        // The bound applies to the claim alone, and the claim is one round trip (see PostgresSqlText).
        claimSql = text.claimStatements();
        // A claim that is its own transaction needs no restore: one statement, the bound read from a sub-select.
        claimAloneSql = text.claimStatement();
        completeSql = text.complete(true);
        // In the claim's own transaction the row is locked since the claim, so the token alone fences
        // it. One round trip for the response and the commit: the mode's whole overhead over the bare
        // transaction is then the claim.
        completeAndCommitSql = text.complete(false) + ";COMMIT";
        releaseSql = text.release();
        purgeSql = text.purge();
        purgeFromSql = text.purgeFrom();
    }

    @Override
    public Schema schema() {
        return Schema.POSTGRESQL;
    }

    @Override
    public Claim claim(Connection c, ClaimRequest request, Duration lockTimeout, boolean inTransaction)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(inTransaction ? claimSql : claimAloneSql);
                ResultSet rs = inTransaction ? Postgres.runClaim(ps, request, lockTimeout, "insert")
                        : Postgres.runClaimStatement(ps, request, lockTimeout)) {
            return rs.next() ? Claim.claimed(rs.getInt(1)) : Claim.notClaimed(null);
        }
    }

    @Override
    public boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(commit ? completeAndCommitSql : completeSql)) {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, response.status());
            ps.setString(3, HeaderCodec.encode(response.headers()));
            ps.setBytes(4, response.body());
            ps.setString(5, key.scope());
            ps.setString(6, key.value());
            ps.setObject(7, token.value());
            ps.execute();
            return ps.getUpdateCount() == 1;
        }
    }

    @Override
    public boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            ps.setObject(3, token.value());
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public boolean hasUniqueKey() {
        return true;
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        // Rarely run, so the statement is built per call. As in the claim: SET LOCAL bounds the wait for a
        // transaction holding the row, in the same round trip.
        String sql = "SELECT set_config('lock_timeout', ?, true);"
                + "UPDATE " + table + " SET status = 'FAILED', lease_expires_at = LEAST(lease_expires_at, " + T + ")"
                + " WHERE scope = ? AND idem_key = ? AND status = 'IN_PROGRESS' AND expires_at > " + T
                + (attempt == null ? "" : " AND attempt = ?");
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, PostgresSqlText.lockTimeout(lockTimeout));
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            if (attempt != null) {
                ps.setInt(4, attempt);
            }
            ps.execute(); // first result: set_config
            if (ps.getMoreResults()) {
                throw new SQLException("release statement returned rows instead of an update count");
            }
            return ps.getUpdateCount() == 1;
        }
    }

    @Override
    public long tableBytes(Connection c) throws SQLException {
        // The table, its indexes and its TOAST data (large response bodies live there).
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_total_relation_size(to_regclass(?))")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1); // NULL (no such table) reads as 0
            }
        }
    }

    @Override
    public String purgeSql() {
        return purgeSql;
    }

    @Override
    public String purgeFromSql() {
        return purgeFromSql;
    }
}
