package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.MariaDb.LOCK_WAIT_TIMEOUT;
import static io.retrysafe.jdbc.internal.MariaDb.T;
import static io.retrysafe.jdbc.internal.MariaDb.bounded;
import static io.retrysafe.jdbc.internal.MariaDb.bytes;
import static io.retrysafe.jdbc.internal.MariaDb.micros;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.Arrays;

/**
 * MariaDB's request path (10.6 or later, InnoDB). The claim is one {@code INSERT … ON DUPLICATE KEY
 * UPDATE}: it inserts an absent key, or takes over an expired record, a released one or one whose
 * lease expired, and otherwise changes nothing. A concurrent claim of the same key waits on the primary
 * key for the first transaction to end, so the decision is the database's, never a read followed by
 * a write. The row it leaves is then read back under the lock that statement took, and tells who won.
 *
 * <p>MariaDB evaluates the {@code ON DUPLICATE KEY UPDATE} assignments left to right, each seeing the
 * columns assigned before it. So the takeover is decided once, on the old values, by the first
 * assignment, which installs the request's token; every later assignment applies only where the
 * row now carries that token (tokens are random per claim, so no old row has it).
 *
 * <p>A deadlock (1213) rolls back the whole transaction, and a claim, being its transaction's first
 * statement, simply runs again.
 *
 * <p>MariaDB only: MySQL has no {@code SET STATEMENT} and no NO PAD {@code ascii} collation.
 */
public final class MariaDbRequestSql extends RequestSql {
    /**
     * How long a completion or release waits for a row another transaction has locked. Standalone calls
     * lock a row for one statement, and a completion in its claim's transaction holds the lock already;
     * a longer lock is a transactional claim of the same key (in practice, one taking over an expired
     * lease). The dialect is not told the store's lock timeout here, hence a constant.
     */
    private static final int WRITE_LOCK_WAIT_SECONDS = 1;

    private final String claimSql;
    private final String readBackSql;
    private final String completeSql;
    private final String completeInTransactionSql;
    private final String releaseSql;
    private final String renewSql;
    private final String holdsSql;

    public MariaDbRequestSql(String table) {
        String won = "owner_token = VALUES(owner_token)";
        // The first assignment is ClaimDecision's takeover in SQL: the takeover must be this statement's,
        // atomic with the insert. The read-back then tells whether it claimed, and ClaimDecision answers
        // from the row when it did not.
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
        // Released: nobody holds it, so its lease ends now (the completer of phased operations counts from here).
        releaseSql = bounded(WRITE_LOCK_WAIT_SECONDS, "UPDATE " + table + " SET status = 'FAILED',"
                + " lease_expires_at = LEAST(lease_expires_at, " + T + ")"
                + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + T);
        // A plain (consistent) read: what is committed, without waiting for the transaction holding the row
        // (except under SERIALIZABLE, where it locks; hence the bound).
        holdsSql = bounded(WRITE_LOCK_WAIT_SECONDS, "SELECT owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > "
                + T + " AND lease_expires_at > " + T + " FROM " + table + " WHERE scope = ? AND idem_key = ?");
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo,
            boolean inTransaction) throws SQLException {
        long waitSeconds = MariaDb.lockWaitSeconds(lockTimeout);
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
                if (!mustRunAgain(e) || undo != null || ++deadlocks > ROLLBACK_RETRIES) {
                    // A joined transaction's earlier writes went with the deadlock: its owner must
                    // see the failure and roll back, never commit what is left of it.
                    throw e;
                }
                // A deadlock (ER_LOCK_DEADLOCK, SQLState 40001): InnoDB rolled the whole transaction back.
                // The claim was its first statement, so nothing else was lost: claim again.
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
                return answer(request, Rows.found(rs, 3, rs.getBoolean(9)));
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

    /**
     * True if the committed record is held by {@code owner} with a live lease. Under SERIALIZABLE the
     * plain read locks, and so waits for the transaction holding the row; past the bound that
     * transaction is the one claiming it, not {@code owner}.
     */
    private boolean holds(Connection c, IdempotencyKey key, byte[] owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(holdsSql)) {
            ps.setBytes(1, owner);
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } catch (SQLException e) {
            if (e.getErrorCode() == LOCK_WAIT_TIMEOUT) {
                return false;
            }
            throw e;
        }
    }
}
