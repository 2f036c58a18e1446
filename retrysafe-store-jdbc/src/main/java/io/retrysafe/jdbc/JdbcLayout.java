package io.retrysafe.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/** How the records table is laid out in the database. */
public enum JdbcLayout {
    /**
     * One table with {@code PRIMARY KEY (scope, idem_key)}; the purge deletes expired rows in
     * bounded batches. Every dialect.
     */
    STANDARD,
    /**
     * PostgreSQL only: the table is partitioned by expiry day (UTC), and the purge drops whole days
     * instead of deleting rows, so purging millions of records costs no row deletes, no dead tuples
     * and no vacuum. (scope, key) is kept unique by the shipped functions, which serialise every
     * write to a key on a transaction-scoped advisory lock (see {@code schema-postgresql-partitioned.sql}).
     * Needs the maintenance job ({@link PartitionMaintainer}, run by {@link JdbcPurger}) to create
     * days ahead; a day it has not created lands in a default partition, so no claim is refused.
     */
    PARTITIONED_BY_EXPIRY_DAY;

    /**
     * The layout of an existing table: partitioned if PostgreSQL reports it as a partitioned table,
     * otherwise standard (also when it does not exist yet).
     */
    public static JdbcLayout detect(Connection connection, JdbcDialect dialect, String table) throws SQLException {
        if (dialect != JdbcDialect.POSTGRESQL) {
            return STANDARD;
        }
        try (PreparedStatement ps = connection.prepareStatement(
                "SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(?)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1) ? PARTITIONED_BY_EXPIRY_DAY : STANDARD;
            }
        }
    }
}
