package io.retrysafe.jdbc;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Require;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * Transactional mode: the key, the operation's writes on the same connection, and the stored
 * response commit in one database transaction. A crash anywhere rolls all of it back, so nothing is
 * half done; a concurrent duplicate waits on the key's unique index until the first commits, then
 * replays (past {@link JdbcIdempotencyStore#lockTimeout()}: in progress). The outcome is returned
 * only after the commit succeeded: a caller never sees a success that was rolled back.
 *
 * <pre>{@code
 * TransactionalRetrySafe payments = TransactionalRetrySafe.of(retrySafe);
 * try (Connection c = dataSource.getConnection()) {
 *     Outcome<String> outcome = payments.execute(c, key, fingerprint, ResponseCodec.utf8(),
 *             attempt -> insertPayment(c, request));   // same connection: same transaction
 * }
 * }</pre>
 *
 * <p>Round trips over the bare transaction: one, the claim (it carries the lock bound with it). The
 * response is written in the round trip that commits.
 */
public final class TransactionalRetrySafe {
    private static final System.Logger LOG = System.getLogger(TransactionalRetrySafe.class.getName());

    private final RetrySafe engine;
    private final JdbcIdempotencyStore store;

    private TransactionalRetrySafe(RetrySafe engine, JdbcIdempotencyStore store) {
        this.engine = engine;
        this.store = store;
    }

    /** Transactional mode for an engine built on a {@link JdbcIdempotencyStore}. */
    public static TransactionalRetrySafe of(RetrySafe engine) {
        Require.notNull(engine, "engine");
        if (!(engine.store() instanceof JdbcIdempotencyStore store)) {
            throw new IllegalArgumentException("transactional mode needs an engine on a JdbcIdempotencyStore, but its "
                    + "store was " + engine.store().name());
        }
        if (engine.failOpen()) {
            throw new IllegalArgumentException("transactional mode cannot fail open: the store is the transaction's "
                    + "own database, so there is nothing to run without it");
        }
        return new TransactionalRetrySafe(engine, store);
    }

    /**
     * Runs {@code operation} in a transaction on {@code connection} that begins with the claim and
     * commits with the response. The connection must not be inside a transaction with earlier
     * writes: anything but a completion rolls the transaction back. Its auto-commit setting is
     * restored afterwards. The operation must use {@code connection} for the writes that belong
     * to the request.
     */
    public <T> Outcome<T> execute(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        Require.notNull(connection, "connection");
        boolean autoCommit;
        try {
            autoCommit = connection.getAutoCommit();
            if (autoCommit) {
                connection.setAutoCommit(false);
            }
        } catch (SQLException e) {
            return new Outcome.StoreUnavailable<>(
                    store.failure("begin a transaction", e).withRetryAfter(engine.policy().retryAfter()));
        }
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, true);
        try {
            return engine.withStore(bound).execute(key, fingerprint, codec, operation);
        } finally {
            // Replays, refusals and failures end here: nothing of theirs may be committed.
            if (!bound.ended()) {
                rollbackQuietly(connection, key);
            }
            if (autoCommit) {
                try {
                    connection.setAutoCommit(true);
                } catch (SQLException e) {
                    LOG.log(Level.WARNING, () -> "[" + engine.name() + "] could not restore auto-commit: " + e);
                }
            }
        }
    }

    /**
     * Runs {@code operation} inside a transaction the caller manages (a Spring
     * {@code @Transactional} method, a transaction template): the claim is written on
     * {@code connection}, which must be the transaction's own and have no earlier writes, and the
     * response is written into it, but nothing is committed or rolled back here. The caller must
     * commit only when {@link Joined#commit()} is true, and roll back otherwise; a failing commit
     * means the outcome must not be reported as a success.
     *
     * <p>The claim may block up to the lock timeout on a concurrent duplicate; on PostgreSQL a
     * lock timeout aborts the transaction, which the caller then rolls back.
     */
    public <T> Joined<T> join(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        Require.notNull(connection, "connection");
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, false);
        Outcome<T> outcome = engine.withStore(bound).execute(key, fingerprint, codec, operation);
        return new Joined<>(outcome, bound.completed());
    }

    /** What {@link #join} decided, and whether the caller's transaction may commit. */
    public record Joined<T>(Outcome<T> outcome, boolean commit) {
    }

    private void rollbackQuietly(Connection connection, IdempotencyKey key) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            LOG.log(Level.WARNING, () -> "[" + engine.name() + "] rollback after key " + key.digest() + " failed: " + e);
        }
    }

    public RetrySafe engine() {
        return engine;
    }
}
