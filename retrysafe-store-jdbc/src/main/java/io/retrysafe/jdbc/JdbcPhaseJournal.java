package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.internal.MaintenanceSql;
import io.retrysafe.jdbc.internal.PhaseSql;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Phased operations on a {@link JdbcIdempotencyStore}: each local step runs in a transaction on a
 * connection of the store's data source (the application's database), which also saves the step's state in
 * the key's record, fenced by the owner token, and commits both or neither. PostgreSQL in either layout
 * and MariaDB.
 *
 * <pre>{@code
 * PhasedRetrySafe<Connection> phased = PhasedRetrySafe.builder(retrySafe, JdbcPhaseJournal.of(store)).build();
 * }</pre>
 *
 * <p>A framework that owns the transaction (Spring's transaction manager) runs the step itself and saves
 * the state with {@link #advanceOn}, on the transaction's connection.
 */
public final class JdbcPhaseJournal implements PhaseJournal<Connection> {
    private static final System.Logger LOG = System.getLogger(JdbcPhaseJournal.class.getName());

    private final JdbcIdempotencyStore store;

    private JdbcPhaseJournal(JdbcIdempotencyStore store) {
        this.store = store;
    }

    public static JdbcPhaseJournal of(JdbcIdempotencyStore store) {
        return new JdbcPhaseJournal(Require.notNull(store, "store"));
    }

    public JdbcIdempotencyStore store() {
        return store;
    }

    @Override
    public String name() {
        return store.name();
    }

    private PhaseSql sql() {
        return store.sql().phases();
    }

    @Override
    public Optional<byte[]> read(IdempotencyKey key, OwnerToken token) {
        return store.run(c -> sql().read(c, key, token), "read saved steps");
    }

    @Override
    public FencedWrite advance(IdempotencyKey key, OwnerToken token, Duration leaseTtl, StepWork<Connection> work)
            throws Exception {
        Connection c;
        try {
            c = store.dataSource().getConnection();
        } catch (SQLException e) {
            throw store.failure("begin a step", e);
        }
        // Any SQLException, the step's own on this connection included, is the database's: the step is
        // then wholly done or not at all, with its state, and the attempt that resumes reads which.
        try {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                byte[] state = work.run(c);
                if (!advanceOn(c, key, token, state, leaseTtl)) {
                    c.rollback();
                    return FencedWrite.LEASE_LOST;
                }
                c.commit();
                return FencedWrite.COMMITTED;
            } catch (Exception e) {
                rollbackQuietly(c, key);
                throw e;
            } finally {
                if (autoCommit) {
                    restoreQuietly(c);
                }
            }
        } catch (SQLException e) {
            throw store.failure("run a step", e);
        } finally {
            closeQuietly(c);
        }
    }

    /**
     * Saves {@code state} with the key and renews its lease on {@code connection}, inside the caller's
     * transaction, if {@code token} holds the key; the caller commits, or rolls back when it returns false.
     */
    public boolean advanceOn(Connection connection, IdempotencyKey key, OwnerToken token, byte[] state,
            Duration leaseTtl) throws SQLException {
        Require.notNull(connection, "connection");
        return sql().advance(connection, key, token, Require.notNull(state, "state"), Require.positive(leaseTtl, "leaseTtl"));
    }

    @Override
    public List<Abandoned> abandoned(Duration idleFor, int limit) {
        return store.run(c -> sql().abandoned(c, idleFor, limit), "find abandoned operations");
    }

    @Override
    public long countAbandoned(Duration idleFor) {
        return store.run(c -> sql().countAbandoned(c, idleFor), "count abandoned operations");
    }

    @Override
    public <R> Optional<R> exclusively(String name, Supplier<R> work) {
        MaintenanceSql sql = store.sql().maintenance();
        String lock = name + ":" + store.sql().table();
        try (Connection c = store.dataSource().getConnection()) {
            c.setAutoCommit(true);
            if (!sql.tryLock(c, lock)) {
                return Optional.empty();
            }
            try {
                return Optional.ofNullable(work.get());
            } finally {
                sql.unlock(c, lock);
            }
        } catch (SQLException e) {
            throw store.failure("take lock " + lock, e);
        }
    }

    /** A connection that broke cannot take auto-commit back; the pool discards it when it is closed. */
    private void restoreQuietly(Connection c) {
        try {
            c.setAutoCommit(true);
        } catch (SQLException e) {
            LOG.log(Level.DEBUG, () -> "[" + store.name() + "] could not restore auto-commit after a step: " + e);
        }
    }

    private void closeQuietly(Connection c) {
        try {
            c.close();
        } catch (SQLException e) {
            LOG.log(Level.DEBUG, () -> "[" + store.name() + "] could not close a step's connection: " + e);
        }
    }

    private void rollbackQuietly(Connection c, IdempotencyKey key) {
        try {
            c.rollback();
        } catch (SQLException e) {
            LOG.log(Level.WARNING, () -> "[" + store.name() + "] could not roll back a step of key " + key.digest()
                    + "; closing its connection ends the transaction: " + e);
        }
    }

    @Override
    public String toString() {
        return "JdbcPhaseJournal[" + store + "]";
    }
}
