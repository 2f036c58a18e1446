package io.retrysafe.testservices;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Empty schemas on the test databases, for tests that let a tool (a migration tool, the store's own
 * {@code createSchema()}) make tables in the connection's default schema, as an application does.
 * Each call drops what a previous run left and creates the schema anew; the returned pool's connections
 * work in it. The caller closes the pool.
 */
public final class TestSchemas {
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]*");
    /** Enough for the contract's races; small, as the servers are shared with other builds' tests. */
    private static final int POOL_SIZE = 10;
    private static final int MAX_NAME = 63; // PostgreSQL's identifiers; MariaDB's are 64

    private TestSchemas() {}

    /** A schema of that name in the PostgreSQL test database. */
    public static HikariDataSource postgres(String schema) {
        check(schema, schema);
        execute(TestDatabases.postgres(), "DROP SCHEMA IF EXISTS " + schema + " CASCADE", "CREATE SCHEMA " + schema);
        HikariConfig config = config("schema-" + schema, TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword());
        config.setSchema(schema); // search_path: unqualified names are made and found there
        return new HikariDataSource(config);
    }

    /**
     * A database named after the MariaDB test database and {@code suffix} (MariaDB's schemas are
     * databases, and the server may be shared by several test databases).
     */
    public static HikariDataSource mariadb(String suffix) {
        check(suffix, suffix);
        String database;
        try (Connection c = TestDatabases.mariadb().getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT DATABASE()")) {
            rs.next();
            database = rs.getString(1) + "_" + suffix;
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the MariaDB test database's name: " + e.getMessage(), e);
        }
        check(suffix, database);
        execute(TestDatabases.mariadb(), "DROP DATABASE IF EXISTS " + database, "CREATE DATABASE " + database);
        HikariConfig config = config("schema-" + database, TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(),
                TestDatabases.mariadbPassword());
        config.setCatalog(database); // USE database
        return new HikariDataSource(config);
    }

    private static void check(String given, String name) {
        if (!NAME.matcher(given).matches() || name.length() > MAX_NAME) {
            throw new IllegalArgumentException("a test schema's name is lower case letters, digits and underscores, "
                    + "at most " + MAX_NAME + " in all, but was \"" + name + "\"");
        }
    }

    private static HikariConfig config(String poolName, String url, String user, String password) {
        HikariConfig config = new HikariConfig();
        config.setPoolName(poolName);
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(POOL_SIZE);
        config.setMinimumIdle(0);
        // Connect on demand, and wait for a connection (30 s) rather than fail at once when the shared
        // server is at its connection limit for a moment.
        config.setInitializationFailTimeout(-1);
        return config;
    }

    private static void execute(DataSource ds, String... statements) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            for (String sql : statements) {
                st.execute(sql);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("cannot make a fresh test schema: " + e.getMessage(), e);
        }
    }
}
