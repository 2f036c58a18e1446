package io.retrysafe.examples.paymentsservice;

import io.retrysafe.testservices.Sql;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The test database: the PostgreSQL of {@link TestDatabases}, in a schema of its own so that the
 * service's tables (account, payment, …) never meet another module's. Every test makes its own
 * accounts, so tests and repeated runs do not see each other's money.
 */
final class ServiceDatabase {
    static final String SCHEMA = "payments_service_it";
    private static boolean schemaCreated;

    private ServiceDatabase() {
    }

    static synchronized String url() {
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
        return base + (base.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA;
    }

    static String user() {
        return TestDatabases.postgresUser();
    }

    static String password() {
        return TestDatabases.postgresPassword();
    }

    /** Connections a service under test may hold: the server is shared, and its connections are few. */
    static final int POOL_SIZE = 8;

    static void register(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", ServiceDatabase::url);
        registry.add("spring.datasource.username", ServiceDatabase::user);
        registry.add("spring.datasource.password", ServiceDatabase::password);
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> POOL_SIZE);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
    }

    /** The same, as arguments of a service started as a process. */
    static String[] arguments() {
        return new String[] {"--spring.datasource.url=" + url(), "--spring.datasource.username=" + user(),
            "--spring.datasource.password=" + password(), "--spring.datasource.hikari.maximum-pool-size=" + POOL_SIZE,
            "--spring.datasource.hikari.minimum-idle=1"};
    }

    static Connection connect() throws SQLException {
        return DriverManager.getConnection(url(), user(), password());
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

    /** An open transaction holding the account's row lock, as a concurrent writer would. */
    static final class RowLock implements AutoCloseable {
        private final Connection connection;
        private final int pid;

        RowLock(String account) throws SQLException {
            connection = connect();
            connection.setAutoCommit(false);
            try (PreparedStatement ps = connection.prepareStatement("SELECT id FROM account WHERE id = ? FOR UPDATE")) {
                ps.setString(1, account);
                ps.executeQuery().close();
            }
            try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getInt(1);
            }
        }

        /** The backend pid of a session waiting for this lock, or 0 when none is. */
        int waiter() throws SQLException {
            try (Connection c = connect(); PreparedStatement ps = c.prepareStatement(
                    "SELECT pid FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid))")) {
                ps.setInt(1, pid);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? rs.getInt(1) : 0;
                }
            }
        }

        @Override
        public void close() throws SQLException {
            try {
                connection.rollback();
            } finally {
                connection.close();
            }
        }
    }

    static boolean backendAlive(int pid) throws SQLException {
        return queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid) > 0;
    }
}
