package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.MariaDb.T;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/** MariaDB's purge: batch deletes that skip locked rows, under a server-wide {@code GET_LOCK}. */
public final class MariaDbMaintenanceSql extends MaintenanceSql {
    private final String purgeSql;
    private final String lockSql;
    private final String unlockSql;

    public MariaDbMaintenanceSql(String table) {
        // MariaDB's DELETE cannot skip locked rows, and a range delete waits on the first live row past the
        // range if an open transaction (a transactional claim) holds it. The derived table picks the batch
        // oldest first, skipping rows locked by others, and locks it; the join then deletes exactly those.
        purgeSql = "DELETE r FROM (SELECT scope, idem_key FROM " + table + " WHERE expires_at <= " + T
                + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED) x STRAIGHT_JOIN " + table
                + " r ON r.scope = x.scope AND r.idem_key = x.idem_key WHERE r.expires_at <= " + T;
        // GET_LOCK names are server-wide and at most 64 characters: qualify an unqualified table's lock by
        // the current database, as PostgreSQL's advisory locks are per database, and hash long names.
        String name = table.indexOf('.') >= 0 ? "?" : "CONCAT(COALESCE(DATABASE(), ''), '.', ?)";
        String lockName = "(SELECT IF(CHAR_LENGTH(n) <= 64, n, SHA2(n, 256)) AS n FROM (SELECT " + name + " AS n) l) l";
        lockSql = "SELECT GET_LOCK(n, 0) FROM " + lockName;
        unlockSql = "SELECT RELEASE_LOCK(n) FROM " + lockName;
    }

    @Override
    public int purgeBatch(Connection c, int limit) throws SQLException {
        return delete(c, purgeSql, limit);
    }

    @Override
    public boolean tryLock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lockSql)) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getInt(1) == 1; // NULL (an error) is not the lock
            }
        }
    }

    @Override
    public void unlock(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(unlockSql)) {
            ps.setString(1, name);
            ps.executeQuery().close();
        }
    }
}
