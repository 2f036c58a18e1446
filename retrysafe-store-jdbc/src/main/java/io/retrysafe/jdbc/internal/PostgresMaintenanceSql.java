package io.retrysafe.jdbc.internal;

import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.OffsetDateTime;

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
    public Batches batches() {
        String sql = layout.purgeFromSql();
        return sql == null ? super.batches() : new FromLast(sql);
    }

    /** Each batch starts at the latest {@code expires_at} the one before it deleted. */
    private static final class FromLast implements Batches {
        private final String sql;
        private OffsetDateTime from; // null before the first batch

        FromLast(String sql) {
            this.sql = sql;
        }

        @Override
        public int next(Connection c, int limit) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setObject(1, from, Types.TIMESTAMP_WITH_TIMEZONE);
                ps.setInt(2, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    OffsetDateTime latest = rs.getObject(2, OffsetDateTime.class);
                    if (latest != null) {
                        from = latest;
                    }
                    return rs.getInt(1);
                }
            }
        }
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
