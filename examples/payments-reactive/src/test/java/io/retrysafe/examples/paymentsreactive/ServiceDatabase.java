package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.testservices.Sql;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * The test database: the PostgreSQL of {@link TestDatabases} ({@code RETRYSAFE_PG_URL}), in a schema of
 * its own so that the service's tables (account, payment, …) never meet another module's. The service
 * reaches it over R2DBC, the test over JDBC. Every test makes its own accounts, so tests and repeated
 * runs do not see each other's money.
 */
final class ServiceDatabase {
    static final String SCHEMA = "payments_reactive_it";
    /** Connections a service under test may hold: the server is shared, and its connections are few. */
    static final int POOL_SIZE = 8;
    private static boolean schemaCreated;

    private ServiceDatabase() {
    }

    private static synchronized String base() {
        String base = TestDatabases.postgresJdbcUrl();
        if (!schemaCreated) {
            try (Connection c = DriverManager.getConnection(base, user(), password());
                    Statement s = c.createStatement()) {
                s.execute("CREATE SCHEMA IF NOT EXISTS " + SCHEMA);
            } catch (SQLException e) {
                // 23505/42P06: another JVM created it at the same moment.
                if (!"23505".equals(e.getSQLState()) && !"42P06".equals(e.getSQLState())) {
                    throw new IllegalStateException("could not create schema " + SCHEMA + ": " + e.getMessage(), e);
                }
            }
            schemaCreated = true;
        }
        return base;
    }

    static String jdbcUrl() {
        String base = base();
        return base + (base.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA;
    }

    /**
     * The same database as an R2DBC URL: {@code jdbc:postgresql://host:port/db?…} becomes
     * {@code r2dbc:postgresql://host:port/db?schema=…}; JDBC-only parameters are left out.
     */
    static String r2dbcUrl() {
        String base = base();
        String address = base.substring("jdbc:".length());
        int query = address.indexOf('?');
        return "r2dbc:" + (query < 0 ? address : address.substring(0, query)) + "?schema=" + SCHEMA;
    }

    static String user() {
        return TestDatabases.postgresUser();
    }

    static String password() {
        return TestDatabases.postgresPassword();
    }

    /** The service's arguments (or properties) that point it at this database. */
    static String[] arguments() {
        return new String[] {"--spring.r2dbc.url=" + r2dbcUrl(), "--spring.r2dbc.username=" + user(),
            "--spring.r2dbc.password=" + password(), "--spring.r2dbc.pool.max-size=" + POOL_SIZE,
            "--spring.r2dbc.pool.initial-size=1"};
    }

    static Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(), user(), password());
    }

    /** A fresh account with this balance (the service must have created the tables). */
    static String newAccount(long balance) throws SQLException {
        String id = "it-" + UUID.randomUUID().toString().substring(0, 18);
        update("INSERT INTO account (id, label, balance) VALUES (?, 'Test account', ?)", id, balance);
        return id;
    }

    static long payments(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM payment WHERE account = ?", account);
    }

    static long ledgerEntries(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM ledger WHERE account = ?", account);
    }

    static long balance(String account) throws SQLException {
        return queryLong("SELECT balance FROM account WHERE id = ?", account);
    }

    static long queryLong(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.queryLong(c, sql, args);
        }
    }

    static int update(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.update(c, sql, args);
        }
    }
}
