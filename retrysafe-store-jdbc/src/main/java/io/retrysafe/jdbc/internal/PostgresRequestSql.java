package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.Postgres.LOCK_NOT_AVAILABLE;
import static io.retrysafe.jdbc.internal.Postgres.SERIALIZATION_FAILURE;
import static io.retrysafe.jdbc.internal.Postgres.UNIQUE_VIOLATION;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;

/**
 * PostgreSQL's request path. The claim is its layout's one atomic statement, which inserts or takes
 * over; when that did not claim, {@link io.retrysafe.spi.ClaimDecision} answers from the record the
 * statement returned or, in the standard layout, the record read right after it. With a unique key
 * (the standard layout) it can also write the key last.
 */
public final class PostgresRequestSql extends RequestSql {
    private final PostgresLayout layout;
    private final String selectSql;
    private final String renewSql;
    private final String insertCompletedSql;
    private final String insertCompletedAndCommitSql;
    private final String takeOverCompletedSql;
    private final String takeOverCompletedAndCommitSql;

    public PostgresRequestSql(String table, PostgresLayout layout) {
        this.layout = layout;
        PostgresSqlText text = new PostgresSqlText(table, BindMarkers.QUESTION_MARKS);
        selectSql = text.select();
        renewSql = text.renewLease();
        // Key last: the lock bound applies to the insert alone, as to the claim, and is restored before
        // the COMMIT, whose deferred checks wait as the application's would. Each insert is one statement.
        insertCompletedSql = text.insertCompleted();
        insertCompletedAndCommitSql = insertCompletedSql + ";COMMIT";
        takeOverCompletedSql = text.insertCompletedOrTakeOver();
        takeOverCompletedAndCommitSql = takeOverCompletedSql + ";COMMIT";
    }

    @Override
    public ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo,
            boolean inTransaction) throws SQLException {
        int rollbacks = 0;
        for (int round = 0; round < CLAIM_ROUNDS; ) {
            PostgresLayout.Claim claim;
            try {
                claim = layout.claim(c, request, lockTimeout, inTransaction);
            } catch (SQLException e) {
                if (LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                    // The holder's transaction outlived the bound. PostgreSQL aborted ours: undo the claim.
                    undoAbortedClaim(c, undo);
                    return new ClaimResult.InProgress(lockTimeout);
                }
                if (!mustRunAgain(e)) {
                    throw e;
                }
                undoAbortedClaim(c, undo);
                if (undo != null) {
                    // A concurrent request wrote the record after the snapshot of the application's
                    // transaction (REPEATABLE READ or SERIALIZABLE), which can never see it: only a retry can.
                    return new ClaimResult.InProgress(lockTimeout);
                }
                if (++rollbacks > ROLLBACK_RETRIES) {
                    throw e;
                }
                // The claim was its transaction's first statement: it runs again with a snapshot that sees the record.
                continue;
            }
            if (claim.isClaimed()) {
                return new ClaimResult.Claimed(request.token(), claim.attempt());
            }
            FoundRecord found = claim.found() != null ? claim.found() : read(c, request.key());
            ClaimResult answer = found == null ? null : answer(request, found);
            if (answer != null) {
                return answer;
            }
            round++; // purged, expired, released or lease expired since the statement looked: claim again
        }
        return new ClaimResult.InProgress(Duration.ZERO);
    }

    /** The record as committed, read without waiting; null if there is none. */
    private FoundRecord read(Connection c, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(selectSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Rows.found(rs, 1, rs.getBoolean(7)) : null;
            }
        }
    }

    @Override
    public boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException {
        return layout.complete(c, key, token, response, retention, commit);
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
        return layout.release(c, key, token);
    }

    // ---------------------------------------------------------------- key last

    /** Only with a unique key: the loser's plain insert must fail ({@link PostgresLayout#hasUniqueKey()}). */
    @Override
    public boolean supportsKeyLast() {
        return layout.hasUniqueKey();
    }

    @Override
    public ClaimResult lookup(Connection c, ClaimRequest request) throws SQLException {
        FoundRecord found = read(c, request.key());
        if (found == null) {
            return new ClaimResult.Unclaimed(request.token());
        }
        ClaimResult answer = answer(request, found);
        // A live lease is left to the claim, which waits for its holder.
        return answer instanceof ClaimResult.Replay || answer instanceof ClaimResult.FingerprintMismatch ? answer : null;
    }

    @Override
    public ClaimResult decision(Connection c, ClaimRequest request) throws SQLException {
        FoundRecord found = read(c, request.key());
        if (found == null) {
            // The insert met another attempt's, not committed within the bound.
            return new ClaimResult.InProgress(Duration.ZERO);
        }
        ClaimResult answer = answer(request, found);
        return answer == null ? new ClaimResult.Unclaimed(request.token()) : answer;
    }

    @Override
    public boolean insertCompleted(Connection c, ClaimRequest request, StoredResponse response, Duration lockTimeout,
            boolean commit, boolean takeOver) throws SQLException {
        if (!supportsKeyLast()) {
            return super.insertCompleted(c, request, response, lockTimeout, commit, takeOver);
        }
        String sql = takeOver ? (commit ? takeOverCompletedAndCommitSql : takeOverCompletedSql)
                : (commit ? insertCompletedAndCommitSql : insertCompletedSql);
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, request.key().scope());
            ps.setString(2, request.key().value());
            ps.setBytes(3, request.fingerprint().bytes());
            ps.setObject(4, request.token().value());
            ps.setLong(5, request.retention().toMillis());
            ps.setInt(6, response.status());
            ps.setString(7, HeaderCodec.encode(response.headers()));
            ps.setBytes(8, response.body());
            ps.setString(9, PostgresSqlText.lockTimeout(lockTimeout));
            ps.execute();
            return true;
        } catch (SQLException e) {
            // Committed by another attempt (23505; with the takeover, its own error, or 40001 where the record
            // committed after a REPEATABLE READ snapshot), or still in its transaction past the bound (55P03).
            if (!UNIQUE_VIOLATION.equals(e.getSQLState()) && !LOCK_NOT_AVAILABLE.equals(e.getSQLState())
                    && !(takeOver && (PostgresSqlText.KEY_NOT_TAKEN.equals(e.getSQLState())
                            || SERIALIZATION_FAILURE.equals(e.getSQLState())))) {
                throw e;
            }
            if (commit) {
                c.rollback();
                // A deferred unique constraint of the operation's own rows also fails with 23505 at the COMMIT,
                // and SERIALIZABLE's check with 40001: if no record of the key is there, the failure was the
                // transaction's own. (Past the bound, the other attempt's record is not committed yet.)
                if (!LOCK_NOT_AVAILABLE.equals(e.getSQLState())
                        && lookup(c, request) instanceof ClaimResult.Unclaimed) {
                    throw e;
                }
            }
            return false;
        }
    }
}
