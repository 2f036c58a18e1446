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
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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
public class PostgresSqlDialect extends SqlDialect {
    static final String LOCK_NOT_AVAILABLE = "55P03";
    static final String UNIQUE_VIOLATION = "23505";
    static final String T = "statement_timestamp()";

    private final String claimSql;
    private final String selectSql;
    private final String completeSql;
    private final String completeAndCommitSql;
    private final String releaseSql;
    private final String renewSql;
    private final String inspectSql;
    private final String purgeSql;
    private final String insertCompletedSql;
    private final String insertCompletedAndCommitSql;

    public PostgresSqlDialect(String table) {
        this(table, "/io/retrysafe/jdbc/schema-postgresql.sql");
    }

    PostgresSqlDialect(String table, String schemaResource) {
        super(table, schemaResource);
        // The bound applies to the claim alone: set_config(…, true) is SET LOCAL, the previous value
        // is saved first and put back right after the insert, so neither the rest of the application's
        // transaction nor its later use of the connection waits under it. Three statements, one round trip.
        claimSql = "SELECT set_config('retrysafe.saved_lock_timeout', current_setting('lock_timeout'), true),"
                + " set_config('lock_timeout', ?, true);"
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
                + " RETURNING attempt;"
                + "SELECT set_config('lock_timeout', current_setting('retrysafe.saved_lock_timeout'), true)";
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
        renewSql = "UPDATE " + table + " SET lease_expires_at = " + T + " + ? * interval '1 millisecond'"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T;
        releaseSql = "UPDATE " + table + " SET status = 'FAILED'"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T;
        inspectSql = "SELECT fingerprint, status, attempt, created_at, lease_expires_at, completed_at, expires_at,"
                + " response_status, response_headers, response_body FROM " + table
                + " WHERE scope = ? AND idem_key = ? AND expires_at > " + T;
        purgeSql = "DELETE FROM " + table + " WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM " + table
                + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
        // Key last: a plain INSERT, so that a key another attempt committed is an error (23505) that
        // aborts this transaction before its COMMIT runs; ON CONFLICT DO NOTHING would commit the
        // loser's writes. The lock bound applies to the insert alone, as to the claim: it is
        // restored before the COMMIT, whose deferred checks wait as the application's would.
        String insert = "INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt,"
                + " created_at, lease_expires_at, completed_at, expires_at, response_status, response_headers,"
                + " response_body) VALUES (?, ?, ?, 'COMPLETED', ?, 1, " + T + ", " + T + ", " + T + ", " + T
                + " + ? * interval '1 millisecond', ?, ?, ?)";
        insertCompletedSql = "SELECT set_config('retrysafe.saved_lock_timeout', current_setting('lock_timeout'), true),"
                + " set_config('lock_timeout', ?, true);" + insert + ";"
                + "SELECT set_config('lock_timeout', current_setting('retrysafe.saved_lock_timeout'), true)";
        insertCompletedAndCommitSql = insertCompletedSql + ";COMMIT";
    }

    @Override
    public boolean supportsKeyLast() {
        return true;
    }

    @Override
    public ClaimResult lookup(Connection c, ClaimRequest request) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(selectSql)) {
            ps.setString(1, request.key().scope());
            ps.setString(2, request.key().value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new ClaimResult.Unclaimed(request.token());
                }
                if (rs.getBoolean(7)) {
                    return null; // expired: the claim takes it over
                }
                if (!Fingerprint.of(rs.getBytes(1)).matches(request.fingerprint())) {
                    return new ClaimResult.FingerprintMismatch();
                }
                if (RecordStatus.valueOf(rs.getString(2)) == RecordStatus.COMPLETED) {
                    return new ClaimResult.Replay(StoredResponse.of(rs.getInt(3), HeaderCodec.decode(rs.getString(4)),
                            rs.getBytes(5)));
                }
                return null;
            }
        }
    }

    @Override
    public boolean insertCompleted(Connection c, ClaimRequest request, StoredResponse response, Duration lockTimeout,
            boolean commit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(commit ? insertCompletedAndCommitSql : insertCompletedSql)) {
            ps.setString(1, Long.toString(Math.max(1, lockTimeout.toMillis())));
            ps.setString(2, request.key().scope());
            ps.setString(3, request.key().value());
            ps.setBytes(4, request.fingerprint().bytes());
            ps.setObject(5, request.token().value());
            ps.setLong(6, request.retention().toMillis());
            ps.setInt(7, response.status());
            ps.setString(8, HeaderCodec.encode(response.headers()));
            ps.setBytes(9, response.body());
            ps.execute();
            return true;
        } catch (SQLException e) {
            // Committed by another attempt (23505), or still in its transaction past the bound (55P03).
            if (!UNIQUE_VIOLATION.equals(e.getSQLState()) && !LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                throw e;
            }
            if (commit) {
                c.rollback();
                // A deferred unique constraint of the operation's own rows also fails with 23505, at
                // the COMMIT: if no record of the key is there, the failure was the transaction's own.
                if (UNIQUE_VIOLATION.equals(e.getSQLState()) && lookup(c, request) instanceof ClaimResult.Unclaimed) {
                    throw e;
                }
            }
            return false;
        }
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo)
            throws SQLException {
        IdempotencyKey key = request.key();
        for (int round = 0; round < CLAIM_ROUNDS; round++) {
            Integer attempt;
            try {
                attempt = insertOrTakeOver(c, request, lockTimeout);
            } catch (SQLException e) {
                if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                    throw e;
                }
                // The holder's transaction outlived the bound. PostgreSQL aborted ours: undo the claim.
                undoAbortedClaim(c, undo);
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
    public boolean renewLease(Connection c, IdempotencyKey key, OwnerToken token, Duration leaseTtl)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(renewSql)) {
            ps.setLong(1, leaseTtl.toMillis());
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            ps.setObject(4, token.value());
            return ps.executeUpdate() == 1;
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

    static Instant instant(Timestamp t) {
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
    static long lockId(String name) {
        byte[] h = io.retrysafe.internal.Hex.sha256(name);
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (h[i] & 0xff);
        }
        return id;
    }

    // ---------------------------------------------------------------- operators (JdbcAdmin)
    // Rarely run, so the statements are built per call; every value is a bind parameter.

    @Override
    public List<AdminRow> list(Connection c, RecordStatus status, Duration olderThan, int limit) throws SQLException {
        String sql = "SELECT scope, idem_key, status, attempt, created_at, lease_expires_at, expires_at FROM " + table
                + " WHERE expires_at > " + T + " AND created_at <= " + T + " - ? * interval '1 millisecond'"
                + (status == null ? "" : " AND status = ?") + " ORDER BY created_at, scope, idem_key LIMIT ?";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            int i = 1;
            ps.setLong(i++, olderThan.toMillis());
            if (status != null) {
                ps.setString(i++, status.name());
            }
            ps.setInt(i, limit);
            List<AdminRow> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new AdminRow(rs.getString(1), rs.getString(2), RecordStatus.valueOf(rs.getString(3)),
                            rs.getInt(4), instant(rs.getTimestamp(5)), instant(rs.getTimestamp(6)),
                            instant(rs.getTimestamp(7))));
                }
            }
            return rows;
        }
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        // As in the claim: SET LOCAL bounds the wait for a transaction holding the row, in the same round trip.
        String sql = "SELECT set_config('lock_timeout', ?, true);"
                + "UPDATE " + table + " SET status = 'FAILED', lease_expires_at = LEAST(lease_expires_at, " + T + ")"
                + " WHERE scope = ? AND idem_key = ? AND status = 'IN_PROGRESS' AND expires_at > " + T
                + (attempt == null ? "" : " AND attempt = ?");
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, Long.toString(Math.max(1, lockTimeout.toMillis())));
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
    public RecordCounts counts(Connection c) throws SQLException {
        // interval '24 hours', not '1 day': a day of timestamptz arithmetic follows the session's DST changes.
        String live = "expires_at > " + T;
        String sql = "SELECT count(*) FILTER (WHERE " + live + " AND status = 'IN_PROGRESS'),"
                + " count(*) FILTER (WHERE " + live + " AND status = 'COMPLETED'),"
                + " count(*) FILTER (WHERE " + live + " AND status = 'FAILED'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at > " + T + " - interval '1 hour'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '1 hour'"
                + " AND created_at > " + T + " - interval '24 hours'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '24 hours'"
                + " AND created_at > " + T + " - interval '168 hours'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '168 hours'),"
                + " count(*) FILTER (WHERE expires_at <= " + T + ") FROM " + table;
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new RecordCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                    rs.getLong(6), rs.getLong(7), rs.getLong(8));
        }
    }

    @Override
    public long countExpired(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE expires_at <= " + T);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
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
}
