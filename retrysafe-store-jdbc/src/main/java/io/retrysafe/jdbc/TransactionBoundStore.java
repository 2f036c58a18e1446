package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.internal.RequestSql;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.Optional;

/**
 * The store as seen from inside one application transaction: the claim is the transaction's first
 * statement, the completion commits it, and a release rolls it back, taking the claim with it.
 * With {@link KeyOrder#LAST} the claim of an absent key only reads, and the completion inserts the
 * record instead of updating it; with {@link KeyOrder#LAST_NO_LOOKUP} the claim sends nothing, and a
 * release reads what the key holds. One instance per {@link TransactionalRetrySafe#execute} call; not
 * thread-safe.
 */
final class TransactionBoundStore implements IdempotencyStore {
    private static final System.Logger LOG = System.getLogger(TransactionalRetrySafe.class.getName());

    private final JdbcIdempotencyStore store;
    private final RequestSql sql;
    private final Connection connection;
    private final boolean ownsTransaction;
    /** The claim is the transaction's first statement: nothing before it to keep behind a savepoint. */
    private final boolean claimFirst;
    private final KeyOrder keyOrder;
    /**
     * Key last without a look-up, where the caller can run the operation again: the record is a plain insert, and
     * a key whose record a claim would take over is left to a second run, claimed first ({@link #mustClaimFirst}).
     * Otherwise the insert takes such a record over itself, at a cost to every first request.
     */
    private final boolean plainInsert;
    /** Key last: the request whose record the completion inserts, once the lookup found none (or none was made). */
    private ClaimRequest unclaimed;
    private boolean ended;
    private boolean completed;
    private boolean mustClaimFirst;

    /**
     * @param ownsTransaction true: the completion commits and a release rolls back; false: the
     *     caller's transaction manager does both, and this store only writes
     * @param claimFirst true: the claim is the transaction's first statement (always so when it owns it)
     */
    TransactionBoundStore(JdbcIdempotencyStore store, Connection connection, boolean ownsTransaction,
            boolean claimFirst, KeyOrder keyOrder) {
        this(store, connection, ownsTransaction, claimFirst, keyOrder, false);
    }

    /**
     * @param runsAgain true: the caller runs the operation a second time, claimed first, in a new transaction,
     *     when {@link #mustClaimFirst()} says so after the first
     */
    TransactionBoundStore(JdbcIdempotencyStore store, Connection connection, boolean ownsTransaction,
            boolean claimFirst, KeyOrder keyOrder, boolean runsAgain) {
        this.store = store;
        this.sql = store.sql().requests();
        this.connection = connection;
        this.ownsTransaction = ownsTransaction;
        this.claimFirst = ownsTransaction || claimFirst;
        this.keyOrder = keyOrder;
        this.plainInsert = keyOrder == KeyOrder.LAST_NO_LOOKUP && runsAgain;
    }

    /**
     * True when key last without a look-up met a record that a claim takes over (expired, or released or
     * abandoned with this body): nothing was written, the transaction was rolled back, and the operation must run
     * again with the key claimed first.
     */
    boolean mustClaimFirst() {
        return mustClaimFirst;
    }

    /** True once the transaction was committed with its response or rolled back by a release. */
    boolean ended() {
        return ended;
    }

    /** True once the response was written into the transaction (and, when it owns it, committed). */
    boolean completed() {
        return completed;
    }

    /** False: the completion is the transaction's commit, and a failed one rolls the operation's writes back. */
    @Override
    public boolean isStandalone() {
        return false;
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        try {
            if (keyOrder == KeyOrder.LAST_NO_LOOKUP) {
                // Nothing read: the completion inserts the record or finds what decides the key.
                unclaimed = request;
                return new ClaimResult.Unclaimed(request.token());
            }
            if (keyOrder == KeyOrder.LAST) {
                // Absent (the usual case): nothing is written now. Any other record: claimed as usual.
                ClaimResult found = sql.lookup(connection, request);
                if (found instanceof ClaimResult.Unclaimed) {
                    unclaimed = request;
                }
                if (found != null) {
                    return found;
                }
            }
            return store.boundedWait(wait -> claimFirst ? sql.tryClaim(connection, request, wait, null, true)
                    : claimJoined(request, wait));
        } catch (SQLException e) {
            throw store.failure("claim", e);
        }
    }

    /**
     * The claim inside the caller's transaction, behind a savepoint: whatever does not claim (a lock
     * timeout that aborted the transaction, a replay, a refusal, a failure) is undone back to it, row
     * locks included, and the caller's earlier writes stay, for it to commit or roll back.
     */
    private ClaimResult claimJoined(ClaimRequest request, Duration lockTimeout) throws SQLException {
        Savepoint undo = connection.setSavepoint();
        ClaimResult result;
        try {
            result = sql.tryClaim(connection, request, lockTimeout, undo, true);
        } catch (SQLException | RuntimeException e) {
            try {
                connection.rollback(undo);
            } catch (SQLException rollback) {
                e.addSuppressed(rollback); // gone with the transaction (a deadlock): the caller must roll back
            }
            throw e;
        }
        if (result instanceof ClaimResult.Claimed) {
            connection.releaseSavepoint(undo);
        } else {
            connection.rollback(undo);
        }
        return result;
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        if (insertsRecordOf(key, token)) {
            return insertCompleted(response, retention);
        }
        boolean written;
        try {
            written = sql.complete(connection, key, token, response, retention, ownsTransaction);
        } catch (SQLException e) {
            // Not committed: the caller rolls back, and the client must not see a success.
            throw store.failure(ownsTransaction ? "commit the transaction with its response" : "store the response", e);
        }
        ended = ownsTransaction;
        completed = written;
        if (!written) {
            // The claim's row lock makes this unreachable unless something else deleted the record
            // inside the transaction; the work is committed, so say so loudly.
            LOG.log(Level.ERROR, "[" + store.name() + "] key " + key.digest()
                    + " was committed without its record: the record vanished inside its own transaction");
            return FencedWrite.LEASE_LOST;
        }
        return FencedWrite.COMMITTED;
    }

    private FencedWrite insertCompleted(StoredResponse response, Duration retention) {
        ClaimRequest request = new ClaimRequest(unclaimed.key(), unclaimed.fingerprint(), unclaimed.token(),
                unclaimed.leaseTtl(), retention);
        try {
            if (sql.insertCompleted(connection, request, response, store.lockTimeout(), ownsTransaction,
                    keyOrder == KeyOrder.LAST_NO_LOOKUP && !plainInsert)) {
                ended = ownsTransaction;
                completed = true;
                return FencedWrite.COMMITTED;
            }
        } catch (SQLException e) {
            throw store.failure(ownsTransaction ? "commit the transaction with its record" : "store the record", e);
        }
        // Not written: the record another attempt committed first is the answer. Not ended: the caller
        // rolls back what is left open.
        try {
            if (plainInsert) {
                ClaimResult decided = readAfterAbort(c -> sql.decision(c, request));
                if (decided instanceof ClaimResult.Unclaimed) {
                    mustClaimFirst = true;
                    return new FencedWrite.Superseded(new ClaimResult.InProgress(Duration.ZERO));
                }
                return new FencedWrite.Superseded(decided);
            }
            return new FencedWrite.Superseded(readAfterAbort(other -> sql.afterConflict(other, request)));
        } catch (SQLException e) {
            throw store.failure("read the record that superseded this attempt", e);
        }
    }

    private boolean insertsRecordOf(IdempotencyKey key, OwnerToken token) {
        return unclaimed != null && unclaimed.key().equals(key) && unclaimed.token().equals(token);
    }

    private interface Read {
        ClaimResult on(Connection c) throws SQLException;
    }

    /**
     * The record as committed, once this attempt's transaction was rolled back (ours) or aborted (the caller's,
     * so the record is read on another connection). Either connection is left with nothing open.
     */
    private ClaimResult readAfterAbort(Read read) throws SQLException {
        if (ownsTransaction) {
            ClaimResult now = read.on(connection);
            connection.rollback();
            return now;
        }
        try (Connection other = store.dataSource().getConnection()) {
            ClaimResult now = read.on(other);
            if (!other.getAutoCommit()) {
                other.rollback();
            }
            return now;
        }
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        if (ownsTransaction) {
            try {
                connection.rollback();
            } catch (SQLException e) {
                throw store.failure("roll back", e);
            }
            ended = true;
        }
        if (keyOrder == KeyOrder.LAST_NO_LOOKUP && insertsRecordOf(key, token)) {
            // Nothing was read before the operation, so this may be a retry of a decided key whose operation
            // failed or answered what is not kept this time: the caller gets what the key holds, as a retry would.
            try {
                ClaimResult now = readAfterAbort(c -> sql.lookup(c, unclaimed));
                if (now instanceof ClaimResult.Replay || now instanceof ClaimResult.FingerprintMismatch) {
                    return new FencedWrite.Superseded(now);
                }
            } catch (SQLException e) {
                throw store.failure("read the key's record after the rollback", e);
            }
        }
        // A caller's transaction is rolled back by its manager: the outcome says so.
        return FencedWrite.COMMITTED;
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        try {
            return store.sql().operators().inspect(connection, key);
        } catch (SQLException e) {
            throw store.failure("inspect", e);
        }
    }

    @Override
    public int purgeExpired(int limit) {
        return store.purgeExpired(limit);
    }

    @Override
    public String name() {
        return store.name();
    }
}
