package io.retrysafe.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * The purge's statements of one database for one table: the batch delete of expired records and the
 * cluster-wide lock that lets one instance at a time purge (and, partitioned, maintain partitions).
 */
public abstract class MaintenanceSql {
    /** Deletes at most {@code limit} expired records, oldest first, skipping rows locked by others. */
    public abstract int purgeBatch(Connection c, int limit) throws SQLException;

    /** One run's batches, in order: each {@link #purgeBatch}, unless the database starts each where the last ended. */
    public Batches batches() {
        return this::purgeBatch;
    }

    /** The batches of one purge run; not shared between runs. */
    @FunctionalInterface
    public interface Batches {
        /** Deletes at most {@code limit} expired records, as {@link #purgeBatch} does; returns how many. */
        int next(Connection c, int limit) throws SQLException;
    }

    /** Takes a cluster-wide lock without waiting; true if this session now holds it. */
    public abstract boolean tryLock(Connection c, String name) throws SQLException;

    public abstract void unlock(Connection c, String name) throws SQLException;

    /** Runs a batch delete whose one parameter is the batch size. */
    protected static int delete(Connection c, String sql, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setInt(1, limit);
            return ps.executeUpdate();
        }
    }
}
