package io.retrysafe.jdbc.internal;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimDecision;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.TableNames;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;

/**
 * The request path of one database for one table: claim, completion, release, lease renewal and, where
 * the dialect can, the key-last lookup and insert. Every method is one atomic step on the given
 * connection and leaves transaction control to the caller, except where it says otherwise. Time is
 * always the database's clock.
 */
public abstract class RequestSql {
    /** A claim that finds the record changing under it (purged, expired, released) tries again this often. */
    protected static final int CLAIM_ROUNDS = 3;
    /** A claim whose transaction the database rolled back to let a concurrent one through runs again this often. */
    protected static final int ROLLBACK_RETRIES = TableNames.ROLLBACK_RETRIES;

    /**
     * The atomic insert-if-absent or takeover, then, if it did not claim, the decision from the
     * record as committed. Waits at most {@code lockTimeout} for a concurrent holder's transaction;
     * past it answers in progress. If the database aborted the transaction, it is rolled back to
     * {@code undo} when given (the claim joined a transaction with earlier writes, which must stay),
     * otherwise whole (the claim was its first statement). {@code inTransaction}: the claim's transaction goes
     * on after it (transactional mode), rather than being the claim's own (standalone).
     */
    public abstract ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo,
            boolean inTransaction) throws SQLException;

    /** The database rolled the statement's transaction back so that it may be run again ({@link TableNames#isRollbackState}). */
    protected static boolean mustRunAgain(SQLException e) {
        return TableNames.isRollbackState(e.getSQLState());
    }

    /** After the database aborted the claim's transaction: undo only the claim when it joined one, else all of it. */
    protected static void undoAbortedClaim(Connection c, Savepoint undo) throws SQLException {
        if (undo != null) {
            c.rollback(undo);
        } else if (!c.getAutoCommit()) {
            c.rollback();
        }
    }

    /**
     * The answer a claim that did not insert gives from the record it found, by the one decision every
     * store makes ({@link ClaimDecision}); null when that record is to be taken over, which the claim's
     * statement did not do because the record changed since it looked: the claim runs again.
     */
    protected static ClaimResult answer(ClaimRequest request, FoundRecord found) {
        return ClaimDecision.of(request.fingerprint(), found) instanceof ClaimDecision.Answer answer ? answer.result()
                : null;
    }

    /**
     * Stores the response if {@code token} holds the key. With {@code commit}, also commits the
     * connection's transaction, in the same round trip where the database allows it.
     */
    public abstract boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException;

    /** Sets the lease to {@code leaseTtl} from now if {@code token} holds the key, in progress and not expired. */
    public abstract boolean renewLease(Connection c, IdempotencyKey key, OwnerToken token, Duration leaseTtl)
            throws SQLException;

    /** Marks the record FAILED if {@code token} holds the key. */
    public abstract boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException;

    // ---------------------------------------------------------------- key last

    /** Whether this dialect can write the key last ({@link #lookup}, {@link #insertCompleted}). */
    public boolean supportsKeyLast() {
        return false;
    }

    /**
     * Key last, before the operation: the record as committed, without writing or waiting.
     * {@link ClaimResult.Unclaimed} if there is none; a replay or a mismatch for a live record that
     * decides the request; null for any other record (expired, released, in progress), which the
     * caller then claims as usual.
     */
    public ClaimResult lookup(Connection c, ClaimRequest request) throws SQLException {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot write the key last");
    }

    /**
     * Key last, after the operation: inserts the completed record into the connection's transaction,
     * waiting at most {@code lockTimeout} for a concurrent attempt's uncommitted insert of the key;
     * with {@code commit}, commits in the same round trip; with {@code takeOver}, takes over a record
     * that a claim would. True if it wrote. False if another attempt's record is there (and, with
     * {@code takeOver}, is not to be taken), or its insert outlived the bound: nothing was written, and the
     * transaction was rolled back (with {@code commit}) or is aborted, for its owner to roll back.
     */
    public boolean insertCompleted(Connection c, ClaimRequest request, StoredResponse response, Duration lockTimeout,
            boolean commit, boolean takeOver) throws SQLException {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot write the key last");
    }

    /**
     * Key last, once an insert failed on the key: what the key's record as committed decides, read on {@code c}
     * without waiting: a replay, a mismatch, or in progress (a live lease, or no record: another attempt's
     * insert, not committed yet); {@link ClaimResult.Unclaimed} for a record that a claim would take over.
     */
    public ClaimResult decision(Connection c, ClaimRequest request) throws SQLException {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot write the key last");
    }

    /**
     * Key last, once {@link #insertCompleted} found another attempt's record: what the key holds
     * now, read on {@code c} without waiting: a replay, a mismatch, or in progress (that attempt
     * has not committed yet, or its record is gone again).
     */
    public ClaimResult afterConflict(Connection c, ClaimRequest request) throws SQLException {
        ClaimResult now = lookup(c, request);
        return now instanceof ClaimResult.Replay || now instanceof ClaimResult.FingerprintMismatch ? now
                : new ClaimResult.InProgress(Duration.ZERO);
    }
}
