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
        try (c) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                byte[] state = work.run(c);
                if (!advanceOn(c, key, token, state, leaseTtl)) {
                    c.rollback();
                    return FencedWrite.LEASE_LOST;
                }
                // A commit that fails leaves the step either wholly done or not at all, with its state: the
                // attempt that resumes reads which, so the failure is reported as it is.
                c.commit();
                return FencedWrite.COMMITTED;
            } catch (Exception e) {
                rollbackQuietly(c, key);
                throw e instanceof SQLException sql ? store.failure("commit a step", sql) : e;
            } finally {
                if (autoCommit) {
                    c.setAutoCommit(true);
                }
            }
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
