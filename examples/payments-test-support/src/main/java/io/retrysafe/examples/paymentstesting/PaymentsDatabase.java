package io.retrysafe.examples.paymentstesting;

import io.retrysafe.testservices.Sql;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * The payments services' test database: the PostgreSQL of {@link TestDatabases}
 * ({@code RETRYSAFE_PG_URL}), in a schema of its own so that the services' tables (account, payment, …)
 * never meet another module's. Every test makes its own accounts, so tests and repeated runs do not
 * see each other's money.
 */
public final class PaymentsDatabase {
    public static final String SCHEMA = "payments_examples_it";
    private static boolean schemaCreated;

    private PaymentsDatabase() {
    }

    /** The server's JDBC URL, without the schema; the schema exists once this returns. */
    private static synchronized String server() {
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

    /** The JDBC URL of the schema. */
    public static String url() {
        String base = server();
        return base + (base.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA;
    }

    /**
     * The same database as an R2DBC URL: {@code jdbc:postgresql://host:port/db?…} becomes
     * {@code r2dbc:postgresql://host:port/db?schema=…}; JDBC-only parameters are left out.
     */
    public static String r2dbcUrl() {
        String address = server().substring("jdbc:".length());
        int query = address.indexOf('?');
        return "r2dbc:" + (query < 0 ? address : address.substring(0, query)) + "?schema=" + SCHEMA;
    }

    public static String user() {
        return TestDatabases.postgresUser();
    }

    public static String password() {
        return TestDatabases.postgresPassword();
    }

    public static Connection connect() throws SQLException {
        return DriverManager.getConnection(url(), user(), password());
    }

    /** A fresh account with this balance (the service must have created the tables). */
    public static String newAccount(long balance) throws SQLException {
        String id = "it-" + UUID.randomUUID().toString().substring(0, 18);
        update("INSERT INTO account (id, label, balance) VALUES (?, 'Test account', ?)", id, balance);
        return id;
    }

    public static long payments(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM payment WHERE account = ?", account);
    }

    public static long ledgerEntries(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM ledger WHERE account = ?", account);
    }

    public static long balance(String account) throws SQLException {
        return queryLong("SELECT balance FROM account WHERE id = ?", account);
    }

    public static long queryLong(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.queryLong(c, sql, args);
        }
    }

    public static int update(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.update(c, sql, args);
        }
    }
}
