package io.retrysafe.jdbc.internal;

import io.retrysafe.internal.Hex;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/** PostgreSQL's purge: its layout's batch delete, under a session-level advisory lock. */
public final class PostgresMaintenanceSql extends MaintenanceSql {
    private final PostgresLayout layout;

    public PostgresMaintenanceSql(PostgresLayout layout) {
        this.layout = layout;
    }

    @Override
    public int purgeBatch(Connection c, int limit) throws SQLException {
        return delete(c, layout.purgeSql(), limit);
    }

    @Override
    public boolean tryLock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            ps.setLong(1, lockId(name));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    @Override
    public void unlock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
            ps.setLong(1, lockId(name));
            ps.executeQuery().close();
        }
    }

    /** Advisory locks are numbered; a stable 64-bit hash of the name keeps one number per table. */
    static long lockId(String name) {
        byte[] h = Hex.sha256(name);
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (h[i] & 0xff);
        }
        return id;
    }
}
