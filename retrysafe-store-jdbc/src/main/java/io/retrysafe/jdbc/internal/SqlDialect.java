package io.retrysafe.jdbc.internal;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The statements of one database for one table. Every method is one atomic step on the given
 * connection and leaves transaction control to the caller, except where it says otherwise.
 * Time is always the database's clock.
 */
public abstract class SqlDialect {
    /** A claim that finds the record changing under it (purged, expired, released) tries again this often. */
    protected static final int CLAIM_ROUNDS = 3;

    protected final String table;
    private final String simpleName;
    private final String schemaResource;

    protected SqlDialect(String table, String schemaResource) {
        this.table = table;
        this.simpleName = table.substring(table.indexOf('.') + 1);
        this.schemaResource = schemaResource;
    }

    /**
     * The atomic insert-if-absent or takeover, then, if it did not claim, the decision from the
     * record as committed. Waits at most {@code lockTimeout} for a concurrent holder's transaction;
     * past it answers in progress. If the database aborted the transaction, it is rolled back to
     * {@code undo} when given (the claim joined a transaction with earlier writes, which must stay),
     * otherwise whole (the claim was its first statement).
     */
    public abstract ClaimResult tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, Savepoint undo)
            throws SQLException;

    /** After the database aborted the claim's transaction: undo only the claim when it joined one, else all of it. */
    protected static void undoAbortedClaim(Connection c, Savepoint undo) throws SQLException {
        if (undo != null) {
            c.rollback(undo);
        } else if (!c.getAutoCommit()) {
            c.rollback();
        }
    }

    /**
     * Stores the response if {@code token} holds the key. With {@code commit}, also commits the
     * connection's transaction, in the same round trip where the database allows it.
     */
    public abstract boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean commit) throws SQLException;

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
     * with {@code commit}, commits in the same round trip. True if it inserted. False if another
     * attempt's record is there, or its insert outlived the bound: nothing was written, and the
     * transaction was rolled back (with {@code commit}) or is aborted, for its owner to roll back.
     */
    public boolean insertCompleted(Connection c, ClaimRequest request, StoredResponse response, Duration lockTimeout,
            boolean commit) throws SQLException {
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

    /** Sets the lease to {@code leaseTtl} from now if {@code token} holds the key, in progress and not expired. */
    public abstract boolean renewLease(Connection c, IdempotencyKey key, OwnerToken token, Duration leaseTtl)
            throws SQLException;

    /** Marks the record FAILED if {@code token} holds the key. */
    public abstract boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException;

    public abstract Optional<IdempotencyRecord> inspect(Connection c, IdempotencyKey key) throws SQLException;

    /** Deletes at most {@code limit} expired records, oldest first, skipping rows locked by others. */
    public abstract int purgeBatch(Connection c, int limit) throws SQLException;

    /** Takes a cluster-wide lock without waiting; true if this session now holds it. */
    public abstract boolean tryLock(Connection c, String name) throws SQLException;

    public abstract void unlock(Connection c, String name) throws SQLException;

    // ---------------------------------------------------------------- operators (JdbcAdmin)

    /**
     * Live records created at least {@code olderThan} ago, of {@code status} (any if null), oldest
     * first, at most {@code limit}. A plain read: it never waits for a lock.
     */
    public abstract List<AdminRow> list(Connection c, RecordStatus status, Duration olderThan, int limit)
            throws SQLException;

    /**
     * An operator's release: marks the live record FAILED if it is IN_PROGRESS, whoever holds it, and
     * ends its lease; with {@code attempt}, only if it is still that attempt. Waits at most
     * {@code lockTimeout} for a transaction holding the row. True if it changed.
     */
    public abstract boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException;

    /** Live records by status and by age, and expired records not purged yet, in one statement. */
    public abstract RecordCounts counts(Connection c) throws SQLException;

    /** Records past {@code expires_at}: what a purge would delete now (rows locked by others aside). */
    public abstract long countExpired(Connection c) throws SQLException;

    /** The table's size on disk in bytes, its indexes included, as the database reports it. */
    public abstract long tableBytes(Connection c) throws SQLException;

    /** The DDL for this table, as shipped in the schema resource. */
    public String schema() {
        try (InputStream in = SqlDialect.class.getResourceAsStream(schemaResource)) {
            if (in == null) {
                throw new IllegalStateException("schema resource missing: " + schemaResource);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("${table}", table)
                    .replace("${name}", simpleName);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public String table() {
        return table;
    }
}
