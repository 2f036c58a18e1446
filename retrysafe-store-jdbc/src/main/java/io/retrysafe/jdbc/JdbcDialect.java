package io.retrysafe.jdbc;

import io.retrysafe.jdbc.internal.PostgresPartitionedLayout;
import io.retrysafe.jdbc.internal.PostgresStandardLayout;
import io.retrysafe.jdbc.internal.SqlDialect;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;

/** The databases the JDBC store speaks. */
public enum JdbcDialect {
    /** PostgreSQL 12 or later. */
    POSTGRESQL,
    /**
     * MariaDB 10.6 or later (InnoDB). Not MySQL: the dialect bounds lock waits with MariaDB's
     * {@code SET STATEMENT} and compares keys with its NO PAD binary collations, which MySQL lacks.
     */
    MARIADB;

    SqlDialect forTable(String table, JdbcLayout layout) {
        if (layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
            if (this != POSTGRESQL) {
                throw new IllegalArgumentException("layout " + layout + " needs PostgreSQL, but the dialect is " + this);
            }
            return SqlDialect.postgres(table, new PostgresPartitionedLayout(table));
        }
        return this == POSTGRESQL ? SqlDialect.postgres(table, new PostgresStandardLayout(table))
                : SqlDialect.mariaDb(table);
    }

    /** The dialect of the database behind {@code connection}, from its product name. */
    public static JdbcDialect detect(Connection connection) throws SQLException {
        String product = connection.getMetaData().getDatabaseProductName();
        String p = product.toLowerCase(Locale.ROOT);
        if (p.contains("postgres")) {
            return POSTGRESQL;
        }
        if (p.contains("mariadb")) {
            return MARIADB;
        }
        throw new IllegalArgumentException(
                "RetrySafe's JDBC store supports PostgreSQL and MariaDB, but the database is " + product);
    }
}
