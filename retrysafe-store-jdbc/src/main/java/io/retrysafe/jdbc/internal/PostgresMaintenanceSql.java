package io.retrysafe.jdbc.internal;

import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
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
        try (PreparedStatement ps = c.prepareStatement(PostgresSqlText.tryAdvisoryLock(BindMarkers.QUESTION_MARKS))) {
            ps.setLong(1, PostgresSqlText.lockId(name));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    @Override
    public void unlock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(PostgresSqlText.advisoryUnlock(BindMarkers.QUESTION_MARKS))) {
            ps.setLong(1, PostgresSqlText.lockId(name));
            ps.executeQuery().close();
        }
    }
}
