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
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * MariaDB 10.6 or later (InnoDB). The claim is one {@code INSERT … ON DUPLICATE KEY UPDATE}: it
 * inserts an absent key, or takes over an expired record, a released one or one whose lease
 * expired, and otherwise changes nothing. A concurrent claim of the same key waits on the primary
 * key for the first transaction to end, so the decision is the database's, never a read followed by
 * a write. The row it leaves is then read back under the lock that statement took, and tells who won.
 *
 * <p>MariaDB evaluates the {@code ON DUPLICATE KEY UPDATE} assignments left to right, each seeing the
 * columns assigned before it. So the takeover is decided once, on the old values, by the first
 * assignment, which installs the request's token; every later assignment applies only where the
 * row now carries that token (tokens are random per claim, so no old row has it).
 *
 * <p>{@code UTC_TIMESTAMP(6)} is the clock: the database's, read once per statement, and stored in
 * {@code DATETIME(6)} columns, which no session time zone converts.
 *
 * <p>Waits on another transaction's row lock are bounded per statement with {@code SET STATEMENT
 * innodb_lock_wait_timeout = n FOR …} (whole seconds, at least 1), so the bound never leaks into the
 * session. Past it, InnoDB rolls back the statement only (error 1205); a deadlock (1213) rolls back
 * the whole transaction, and a claim, being its transaction's first statement, simply runs again.
 *
 * <p>MariaDB only: MySQL has no {@code SET STATEMENT} and no NO PAD {@code ascii} collation.
 */
public final class MariaDbSqlDialect extends SqlDialect {
    /** ER_LOCK_WAIT_TIMEOUT, SQLState HY000: only the statement was rolled back (innodb_rollback_on_timeout=OFF). */
    private static final int LOCK_WAIT_TIMEOUT = 1205;
    /** ER_LOCK_DEADLOCK, SQLState 40001: the whole transaction was rolled back. */
    private static final int DEADLOCK = 1213;
    /** Claims chosen as a deadlock's victim are tried again this often before the error is reported. */
    private static final int DEADLOCK_RETRIES = 5;
    /**
     * How long a completion or release waits for a row another transaction has locked. Standalone calls
     * lock a row for one statement, and a completion in its claim's transaction holds the lock already;
     * a longer lock is a transactional claim of the same key (in practice, one taking over an expired
     * lease). The dialect is not told the store's lock timeout here, hence a constant.
     */
    private static final int WRITE_LOCK_WAIT_SECONDS = 1;
    private static final String T = "UTC_TIMESTAMP(6)";

    private final String claimSql;
    private final String readBackSql;
    private final String completeSql;
    private final String completeInTransactionSql;
    private final String releaseSql;
    private final String renewSql;
    private final String holdsSql;
    private final String inspectSql;
    private final String purgeSql;
    private final String lockSql;
    private final String unlockSql;

    public MariaDbSqlDialect(String table) {
        super(table, "/io/retrysafe/jdbc/schema-mariadb.sql");
        String won = "owner_token = VALUES(owner_token)";
        claimSql = "INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, expires_at) VALUES (?, ?, ?, 'IN_PROGRESS', ?, 1, " + T + ", " + T
                + " + INTERVAL ? MICROSECOND, " + T + " + INTERVAL ? MICROSECOND) ON DUPLICATE KEY UPDATE"
                // First, on the old values: does this claim take the record over?
                + " owner_token = IF(expires_at <= " + T + " OR (fingerprint = VALUES(fingerprint)"
                + " AND (status = 'FAILED' OR (status = 'IN_PROGRESS' AND lease_expires_at <= " + T + "))),"
                + " VALUES(owner_token), owner_token),"
                // attempt and created_at read the old expires_at, so they come before it.
                + " attempt = IF(" + won + ", IF(expires_at <= " + T + ", 1, attempt + 1), attempt),"
                + " created_at = IF(" + won + " AND expires_at <= " + T + ", VALUES(created_at), created_at),"
                + " fingerprint = IF(" + won + ", VALUES(fingerprint), fingerprint),"
                + " status = IF(" + won + ", 'IN_PROGRESS', status),"
                + " lease_expires_at = IF(" + won + ", VALUES(lease_expires_at), lease_expires_at),"
                + " completed_at = IF(" + won + ", NULL, completed_at),"
                + " response_status = IF(" + won + ", NULL, response_status),"
                + " response_headers = IF(" + won + ", NULL, response_headers),"
                + " response_body = IF(" + won + ", NULL, response_body),"
                + " expires_at = IF(" + won + ", VALUES(expires_at), expires_at)";
        // A locking read: it returns the row as committed (or as this transaction left it), where a plain
        // read could answer from a REPEATABLE READ snapshot older than the claim. The claim's statement
        // already holds the row's lock in a transaction; in auto-commit it waits at most the bound.
        readBackSql = "SELECT owner_token, attempt, fingerprint, status, response_status, response_headers, response_body,"
                + " CEIL(TIMESTAMPDIFF(MICROSECOND, " + T + ", lease_expires_at) / 1000), expires_at <= " + T
                + " FROM " + table + " WHERE scope = ? AND idem_key = ? LOCK IN SHARE MODE";
        String complete = "UPDATE " + table + " SET status = 'COMPLETED', completed_at = " + T + ", expires_at = " + T
                + " + INTERVAL ? MICROSECOND, response_status = ?, response_headers = ?, response_body = ?"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ?";
        completeSql = bounded(WRITE_LOCK_WAIT_SECONDS, complete + " AND status = 'IN_PROGRESS' AND expires_at > " + T);
        // In the claim's own transaction the row is locked since the claim, so the token alone fences it.
        completeInTransactionSql = bounded(WRITE_LOCK_WAIT_SECONDS, complete);
        renewSql = bounded(WRITE_LOCK_WAIT_SECONDS, "UPDATE " + table + " SET lease_expires_at = " + T
                + " + INTERVAL ? MICROSECOND WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS'"
                + " AND expires_at > " + T);
        releaseSql = bounded(WRITE_LOCK_WAIT_SECONDS, "UPDATE " + table + " SET status = 'FAILED'"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T);
        // A plain (consistent) read: what is committed, without waiting for the transaction holding the row.
        holdsSql = "SELECT owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T + " AND lease_expires_at > "
                + T + " FROM " + table + " WHERE scope = ? AND idem_key = ?";
        inspectSql = "SELECT fingerprint, status, attempt, created_at, lease_expires_at, completed_at, expires_at,"
                + " response_status, response_headers, response_body FROM " + table
                + " WHERE scope = ? AND idem_key = ? AND expires_at > " + T;
        // MariaDB's DELETE cannot skip locked rows, and a range delete waits on the first live row past the
        // range if an open transaction (a transactional claim) holds it. The derived table picks the batch
        // oldest first, skipping rows locked by others, and locks it; the join then deletes exactly those.
        purgeSql = "DELETE r FROM (SELECT scope, idem_key FROM " + table + " WHERE expires_at <= " + T
                + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED) x STRAIGHT_JOIN " + table
                + " r ON r.scope = x.scope AND r.idem_key = x.idem_key WHERE r.expires_at <= " + T;
        // GET_LOCK names are server-wide and at most 64 characters: qualify an unqualified table's lock by
        // the current database, as PostgreSQL's advisory locks are per database, and hash long names.
        String name = table.indexOf('.') >= 0 ? "?" : "CONCAT(COALESCE(DATABASE(), ''), '.', ?)";
        String lockName = "(SELECT IF(CHAR_LENGTH(n) <= 64, n, SHA2(n, 256)) AS n FROM (SELECT " + name + " AS n) l) l";
        lockSql = "SELECT GET_LOCK(n, 0) FROM " + lockName;
        unlockSql = "SELECT RELEASE_LOCK(n) FROM " + lockName;
    }

    /** The statement with its lock waits bounded to {@code seconds}, for this statement only. */
    private static String bounded(long seconds, String sql) {
        return "SET STATEMENT innodb_lock_wait_timeout = " + seconds + " FOR " + sql;
    }

    /** MariaDB counts the lock wait in whole seconds: rounded up, at least one. */
    private static long lockWaitSeconds(Duration lockTimeout) {
        long seconds = lockTimeout.getSeconds() + (lockTimeout.getNano() > 0 ? 1 : 0);
        return Math.max(1, seconds);
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo)
            throws SQLException {
        long waitSeconds = lockWaitSeconds(lockTimeout);
        String claim = bounded(waitSeconds, claimSql);
        String readBack = bounded(waitSeconds, readBackSql);
        byte[] token = bytes(request.token());
        int deadlocks = 0;
        for (int round = 0; round < CLAIM_ROUNDS; ) {
            try {
                insertOrTakeOver(c, claim, request, token);
                ClaimResult decided = readBack(c, readBack, request, token);
                if (decided != null) {
                    return decided;
                }
                round++; // purged, expired or released since the insert looked: claim again
            } catch (SQLException e) {
                if (e.getErrorCode() == LOCK_WAIT_TIMEOUT) {
                    // The holder's transaction outlived the bound. Only this statement was rolled back.
                    return new ClaimResult.InProgress(lockTimeout);
                }
                if (e.getErrorCode() != DEADLOCK || undo != null || ++deadlocks > DEADLOCK_RETRIES) {
                    // A joined transaction's earlier writes went with the deadlock: its owner must
                    // see the failure and roll back, never commit what is left of it.
                    throw e;
                }
                // InnoDB rolled the whole transaction back. The claim was its first statement, so
                // nothing else was lost: claim again.
            }
        }
        return new ClaimResult.InProgress(Duration.ZERO);
    }

    private static void insertOrTakeOver(Connection c, String sql, ClaimRequest request, byte[] token)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, request.key().scope());
            ps.setString(2, request.key().value());
            ps.setBytes(3, request.fingerprint().bytes());
            ps.setBytes(4, token);
            ps.setLong(5, micros(request.leaseTtl()));
            ps.setLong(6, micros(request.retention()));
            // The affected-row count is not used: it depends on the connection's useAffectedRows flag.
            ps.executeUpdate();
        }
    }

    /** Who holds the key after the claim's statement; null when the record changed under it and the claim must run again. */
    private static ClaimResult readBack(Connection c, String sql, ClaimRequest request, byte[] token)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, request.key().scope());
            ps.setString(2, request.key().value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null; // purged since the insert looked
                }
                if (Arrays.equals(rs.getBytes(1), token)) {
                    return new ClaimResult.Claimed(request.token(), rs.getInt(2));
                }
                if (rs.getBoolean(9)) {
                    return null; // expired since the insert looked
                }
                if (!Fingerprint.of(rs.getBytes(3)).matches(request.fingerprint())) {
                    return new ClaimResult.FingerprintMismatch();
                }
                RecordStatus status = RecordStatus.valueOf(rs.getString(4));
                if (status == RecordStatus.COMPLETED) {
                    return new ClaimResult.Replay(StoredResponse.of(rs.getInt(5), HeaderCodec.decode(rs.getString(6)),
                            body(rs.getBytes(7))));
                }
                long leaseMillis = rs.getLong(8);
                if (status == RecordStatus.IN_PROGRESS && leaseMillis > 0) {
                    return new ClaimResult.InProgress(Duration.ofMillis(leaseMillis));
                }
                return null; // released or lease expired since the insert looked
            }
        }
    }

    @Override
    public boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException {
        byte[] owner = bytes(token);
        String sql = commit ? completeInTransactionSql : completeSql;
        boolean written = fencedWrite(c, key, owner, () -> complete(c, sql, key, owner, response, retention));
        if (commit && !c.getAutoCommit()) {
            // A statement and a commit: without allowMultiQueries, which an application's connection does
            // not have, MariaDB takes no COMMIT in the update's round trip.
            c.commit();
        }
        return written;
    }

    private static boolean complete(Connection c, String sql, IdempotencyKey key, byte[] owner, StoredResponse response,
            Duration retention) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, micros(retention));
            ps.setInt(2, response.status());
            ps.setString(3, HeaderCodec.encode(response.headers()));
            ps.setBytes(4, response.body());
            ps.setString(5, key.scope());
            ps.setString(6, key.value());
            ps.setBytes(7, owner);
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public boolean renewLease(Connection c, IdempotencyKey key, OwnerToken token, Duration leaseTtl)
            throws SQLException {
        byte[] owner = bytes(token);
        return fencedWrite(c, key, owner, () -> {
            try (PreparedStatement ps = c.prepareStatement(renewSql)) {
                ps.setLong(1, micros(leaseTtl));
                ps.setString(2, key.scope());
                ps.setString(3, key.value());
                ps.setBytes(4, owner);
                return ps.executeUpdate() == 1;
            }
        });
    }

    @Override
    public boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException {
        byte[] owner = bytes(token);
        return fencedWrite(c, key, owner, () -> {
            try (PreparedStatement ps = c.prepareStatement(releaseSql)) {
                ps.setString(1, key.scope());
                ps.setString(2, key.value());
                ps.setBytes(3, owner);
                return ps.executeUpdate() == 1;
            }
        });
    }

    private interface FencedUpdate {
        boolean run() throws SQLException;
    }

    /**
     * Runs a completion or release fenced by the token. Unlike PostgreSQL, InnoDB makes an update wait
     * for a row that another transaction inserted or changed and has not committed yet: a claim in
     * transactional mode. Past the bound, the committed row decides. A token that does not hold it
     * with a live lease has lost the key (whoever holds the row's lock is claiming it, typically
     * taking over the expired lease); one that does tries again, a bounded number of times.
     */
    private boolean fencedWrite(Connection c, IdempotencyKey key, byte[] owner, FencedUpdate update)
            throws SQLException {
        for (int round = 1; ; round++) {
            try {
                return update.run();
            } catch (SQLException e) {
                if (e.getErrorCode() != LOCK_WAIT_TIMEOUT) {
                    throw e;
                }
                if (!holds(c, key, owner)) {
                    return false;
                }
                if (round >= CLAIM_ROUNDS) {
                    throw e;
                }
            }
        }
    }

    /** True if the committed record is held by {@code owner} with a live lease. */
    private boolean holds(Connection c, IdempotencyKey key, byte[] owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(holdsSql)) {
            ps.setBytes(1, owner);
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
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
                Optional<StoredResponse> response = rs.getObject(8) == null ? Optional.empty()
                        : Optional.of(StoredResponse.of(rs.getInt(8), HeaderCodec.decode(rs.getString(9)),
                                body(rs.getBytes(10))));
                return Optional.of(new IdempotencyRecord(key, Fingerprint.of(rs.getBytes(1)),
                        RecordStatus.valueOf(rs.getString(2)), rs.getInt(3), instant(rs, 4), instant(rs, 5),
                        instant(rs, 6), instant(rs, 7), response));
            }
        }
    }

    /** DATETIME columns hold UTC wall-clock times; read them without the JVM's time zone. */
    private static Instant instant(ResultSet rs, int column) throws SQLException {
        LocalDateTime t = rs.getObject(column, LocalDateTime.class);
        return t == null ? null : t.toInstant(ZoneOffset.UTC);
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
        try (PreparedStatement ps = c.prepareStatement(lockSql)) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getInt(1) == 1; // NULL (an error) is not the lock
            }
        }
    }

    @Override
    public void unlock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(unlockSql)) {
            ps.setString(1, name);
            ps.executeQuery().close();
        }
    }

    /** The token as BINARY(16): the UUID's 128 bits, most significant first. */
    private static byte[] bytes(OwnerToken token) {
        return ByteBuffer.allocate(16).putLong(token.value().getMostSignificantBits())
                .putLong(token.value().getLeastSignificantBits()).array();
    }

    private static long micros(Duration d) {
        return Math.multiplyExact(d.toMillis(), 1000L);
    }

    private static byte[] body(byte[] stored) {
        return stored == null ? new byte[0] : stored;
    }

    // ---------------------------------------------------------------- operators (JdbcAdmin)
    // Rarely run, so the statements are built per call; every value is a bind parameter.

    @Override
    public List<AdminRow> list(Connection c, RecordStatus status, Duration olderThan, int limit) throws SQLException {
        String sql = "SELECT scope, idem_key, status, attempt, created_at, lease_expires_at, expires_at FROM " + table
                + " WHERE expires_at > " + T + " AND created_at <= " + T + " - INTERVAL ? MICROSECOND"
                + (status == null ? "" : " AND status = ?") + " ORDER BY created_at, scope, idem_key LIMIT ?";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            int i = 1;
            ps.setLong(i++, micros(olderThan));
            if (status != null) {
                ps.setString(i++, status.name());
            }
            ps.setInt(i, limit);
            List<AdminRow> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new AdminRow(rs.getString(1), rs.getString(2), RecordStatus.valueOf(rs.getString(3)),
                            rs.getInt(4), instant(rs, 5), instant(rs, 6), instant(rs, 7)));
                }
            }
            return rows;
        }
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        String sql = bounded(lockWaitSeconds(lockTimeout), "UPDATE " + table + " SET status = 'FAILED',"
                + " lease_expires_at = LEAST(lease_expires_at, " + T + ")"
                + " WHERE scope = ? AND idem_key = ? AND status = 'IN_PROGRESS' AND expires_at > " + T
                + (attempt == null ? "" : " AND attempt = ?"));
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            if (attempt != null) {
                ps.setInt(3, attempt);
            }
            // The status always changes where the row matches, so found and affected rows agree.
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public RecordCounts counts(Connection c) throws SQLException {
        String live = "expires_at > " + T;
        String sql = "SELECT COALESCE(SUM(" + live + " AND status = 'IN_PROGRESS'), 0),"
                + " COALESCE(SUM(" + live + " AND status = 'COMPLETED'), 0),"
                + " COALESCE(SUM(" + live + " AND status = 'FAILED'), 0),"
                + " COALESCE(SUM(" + live + " AND created_at > " + T + " - INTERVAL 1 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 1 HOUR"
                + " AND created_at > " + T + " - INTERVAL 24 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 24 HOUR"
                + " AND created_at > " + T + " - INTERVAL 168 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 168 HOUR), 0),"
                + " COALESCE(SUM(expires_at <= " + T + "), 0) FROM " + table;
        try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new RecordCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                    rs.getLong(6), rs.getLong(7), rs.getLong(8));
        }
    }

    @Override
    public long countExpired(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + table + " WHERE expires_at <= " + T);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public long tableBytes(Connection c) throws SQLException {
        // InnoDB's own estimate: data and indexes, refreshed with the table's statistics (ANALYZE TABLE).
        int dot = table.indexOf('.');
        try (PreparedStatement ps = c.prepareStatement("SELECT COALESCE(SUM(data_length + index_length), 0)"
                + " FROM information_schema.tables WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?")) {
            if (dot < 0) {
                ps.setNull(1, java.sql.Types.VARCHAR);
            } else {
                ps.setString(1, table.substring(0, dot));
            }
            ps.setString(2, table.substring(dot + 1));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
