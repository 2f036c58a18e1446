package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.MariaDb.T;

import io.retrysafe.IdempotencyKey;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;

/** MariaDB's operator statements. */
public final class MariaDbOperatorSql extends OperatorSql {

    public MariaDbOperatorSql(String table) {
        super(table, T);
    }

    @Override
    protected Instant instant(ResultSet rs, int column) throws SQLException {
        return MariaDb.instant(rs, column);
    }

    @Override
    protected String listSql(boolean byStatus) {
        return "SELECT scope, idem_key, status, attempt, created_at, lease_expires_at, expires_at FROM " + table
                + " WHERE expires_at > " + T + " AND created_at <= " + T + " - INTERVAL ? MICROSECOND"
                + (byStatus ? " AND status = ?" : "") + " ORDER BY created_at, scope, idem_key LIMIT ?";
    }

    @Override
    protected long olderThan(Duration olderThan) {
        return MariaDb.micros(olderThan);
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        String sql = MariaDb.bounded(MariaDb.lockWaitSeconds(lockTimeout), "UPDATE " + table + " SET status = 'FAILED',"
                + " lease_expires_at = LEAST(lease_expires_at, " + T + ")"
                + " WHERE scope = ? AND idem_key = ? AND status = 'IN_PROGRESS' AND expires_at > " + T
                + (attempt == null ? "" : " AND attempt = ?"));
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            if (attempt != null) {
                ps.setInt(3, attempt);
            }
            // The status always changes where the row matches, so found and affected rows agree.
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    protected String countsSql() {
        String live = "expires_at > " + T;
        return "SELECT COALESCE(SUM(" + live + " AND status = 'IN_PROGRESS'), 0),"
                + " COALESCE(SUM(" + live + " AND status = 'COMPLETED'), 0),"
                + " COALESCE(SUM(" + live + " AND status = 'FAILED'), 0),"
                + " COALESCE(SUM(" + live + " AND created_at > " + T + " - INTERVAL 1 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 1 HOUR"
                + " AND created_at > " + T + " - INTERVAL 24 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 24 HOUR"
                + " AND created_at > " + T + " - INTERVAL 168 HOUR), 0),"
                + " COALESCE(SUM(" + live + " AND created_at <= " + T + " - INTERVAL 168 HOUR), 0),"
                + " COALESCE(SUM(expires_at <= " + T + "), 0) FROM " + table;
    }

    @Override
    protected String countExpiredSql() {
        return "SELECT COUNT(*) FROM " + table + " WHERE expires_at <= " + T;
    }

    @Override
    public long tableBytes(Connection c) throws SQLException {
        // InnoDB's own estimate: data and indexes, refreshed with the table's statistics (ANALYZE TABLE).
        int dot = table.indexOf('.');
        try (PreparedStatement ps = c.prepareStatement("SELECT COALESCE(SUM(data_length + index_length), 0)"
                + " FROM information_schema.tables WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ?")) {
            if (dot < 0) {
                ps.setNull(1, java.sql.Types.VARCHAR);
            } else {
                ps.setString(1, table.substring(0, dot));
            }
            ps.setString(2, table.substring(dot + 1));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
