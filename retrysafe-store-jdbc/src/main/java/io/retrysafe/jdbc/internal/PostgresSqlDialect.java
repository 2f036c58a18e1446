package io.retrysafe.jdbc.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * PostgreSQL. The claim is one {@code INSERT … ON CONFLICT DO UPDATE … WHERE}: it inserts an absent
 * key, or takes over an expired record, a released one or one whose lease expired, and otherwise
 * changes nothing. A concurrent claim of the same key waits on the unique index for the first
 * transaction to end, so the decision is the database's, never a read followed by a write.
 *
 * <p>{@code statement_timestamp()} is the clock: it is the database's, and unlike {@code now()} it
 * does not stand still over a long transaction.
 */
public final class PostgresSqlDialect extends SqlDialect {
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    private static final String T = "statement_timestamp()";

    private final String claimSql;
    private final String selectSql;
    private final String completeSql;
    private final String completeAndCommitSql;
    private final String releaseSql;
    private final String inspectSql;
    private final String purgeSql;

    public PostgresSqlDialect(String table) {
        super(table, "/io/retrysafe/jdbc/schema-postgresql.sql");
        // set_config(…, true) is SET LOCAL: the bound ends with the transaction and never leaks into
        // the application's later use of its connection. Sent with the insert in one round trip.
        claimSql = "SELECT set_config('lock_timeout', ?, true);"
                + "INSERT INTO " + table + " AS r (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, expires_at) VALUES (?, ?, ?, 'IN_PROGRESS', ?, 1, " + T + ", " + T
                + " + ? * interval '1 millisecond', " + T + " + ? * interval '1 millisecond')"
                + " ON CONFLICT (scope, idem_key) DO UPDATE SET"
                + " fingerprint = EXCLUDED.fingerprint, status = 'IN_PROGRESS', owner_token = EXCLUDED.owner_token,"
                + " attempt = CASE WHEN r.expires_at <= " + T + " THEN 1 ELSE r.attempt + 1 END,"
                + " created_at = CASE WHEN r.expires_at <= " + T + " THEN " + T + " ELSE r.created_at END,"
                + " lease_expires_at = EXCLUDED.lease_expires_at, completed_at = NULL, expires_at = EXCLUDED.expires_at,"
                + " response_status = NULL, response_headers = NULL, response_body = NULL"
                + " WHERE r.expires_at <= " + T
                + " OR (r.fingerprint = EXCLUDED.fingerprint AND (r.status = 'FAILED'"
                + " OR (r.status = 'IN_PROGRESS' AND r.lease_expires_at <= " + T + ")))"
                + " RETURNING attempt";
        selectSql = "SELECT fingerprint, status, response_status, response_headers, response_body,"
                + " CEIL(EXTRACT(EPOCH FROM (lease_expires_at - " + T + ")) * 1000)::bigint,"
                + " expires_at <= " + T + " FROM " + table + " WHERE scope = ? AND idem_key = ?";
        String complete = "UPDATE " + table + " SET status = 'COMPLETED', completed_at = " + T + ", expires_at = " + T
                + " + ? * interval '1 millisecond', response_status = ?, response_headers = ?, response_body = ?"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ?";
        completeSql = complete + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
        // In the claim's own transaction the row is locked since the claim, so the token alone fences
        // it. One round trip for the response and the commit: the mode's whole overhead over the bare
        // transaction is then the claim.
        completeAndCommitSql = complete + ";COMMIT";
        releaseSql = "UPDATE " + table + " SET status = 'FAILED'"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T;
        inspectSql = "SELECT fingerprint, status, attempt, created_at, lease_expires_at, completed_at, expires_at,"
                + " response_status, response_headers, response_body FROM " + table
                + " WHERE scope = ? AND idem_key = ? AND expires_at > " + T;
        purgeSql = "DELETE FROM " + table + " WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM " + table
                + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout) throws SQLException {
        IdempotencyKey key = request.key();
        for (int round = 0; round < CLAIM_ROUNDS; round++) {
            Integer attempt;
            try {
                attempt = insertOrTakeOver(c, request, lockTimeout);
            } catch (SQLException e) {
                if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                    throw e;
                }
                // The holder's transaction outlived the bound. PostgreSQL aborted ours: end it.
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
                return new ClaimResult.InProgress(lockTimeout);
            }
            if (attempt != null) {
                return new ClaimResult.Claimed(request.token(), attempt);
            }
            try (PreparedStatement ps = c.prepareStatement(selectSql)) {
                ps.setString(1, key.scope());
                ps.setString(2, key.value());
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next() || rs.getBoolean(7)) {
                        continue; // purged or expired since the insert looked: claim again
                    }
                    if (!Fingerprint.of(rs.getBytes(1)).matches(request.fingerprint())) {
                        return new ClaimResult.FingerprintMismatch();
                    }
                    RecordStatus status = RecordStatus.valueOf(rs.getString(2));
                    if (status == RecordStatus.COMPLETED) {
                        return new ClaimResult.Replay(StoredResponse.of(rs.getInt(3),
                                HeaderCodec.decode(rs.getString(4)), rs.getBytes(5)));
                    }
                    long leaseMillis = rs.getLong(6);
                    if (status == RecordStatus.IN_PROGRESS && leaseMillis > 0) {
                        return new ClaimResult.InProgress(Duration.ofMillis(leaseMillis));
                    }
                    // released or lease expired since the insert looked: claim again
                }
            }
        }
        return new ClaimResult.InProgress(Duration.ZERO);
    }

    private Integer insertOrTakeOver(Connection c, ClaimRequest request, Duration lockTimeout) throws SQLException {
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
                throw new SQLException("claim statement returned no result for its insert");
            }
            try (ResultSet rs = ps.getResultSet()) {
                return rs.next() ? rs.getInt(1) : null;
            }
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
    public Optional<IdempotencyRecord> inspect(Connection c, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(inspectSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                String headers = rs.getString(9);
                Optional<StoredResponse> response = rs.getObject(8) == null ? Optional.empty()
                        : Optional.of(StoredResponse.of(rs.getInt(8), HeaderCodec.decode(headers), rs.getBytes(10)));
                return Optional.of(new IdempotencyRecord(key, Fingerprint.of(rs.getBytes(1)),
                        RecordStatus.valueOf(rs.getString(2)), rs.getInt(3), instant(rs.getTimestamp(4)),
                        instant(rs.getTimestamp(5)), instant(rs.getTimestamp(6)), instant(rs.getTimestamp(7)), response));
            }
        }
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }

    @Override
    public int purgeBatch(Connection c, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(purgeSql)) {
            ps.setInt(1, limit);
            return ps.executeUpdate();
        }
    }

    @Override
    public boolean tryLock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            ps.setLong(1, lockId(name));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    @Override
    public void unlock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
            ps.setLong(1, lockId(name));
            ps.executeQuery().close();
        }
    }

    /** Advisory locks are numbered; a stable 64-bit hash of the name keeps one number per table. */
    private static long lockId(String name) {
        byte[] h = io.retrysafe.internal.Hex.sha256(name);
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (h[i] & 0xff);
        }
        return id;
    }
}
