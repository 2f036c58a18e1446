package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.springframework.test.context.DynamicPropertyRegistry;

/**
 * The service pointed at the test database ({@link PaymentsDatabase}), and what only this service's
 * tests do there: hold an account's row, see whether a session is still alive.
 */
final class ServiceDatabase {

    private ServiceDatabase() {
    }

    /** Connections a service under test may hold: the server is shared, and its connections are few. */
    static final int POOL_SIZE = 8;
    /**
     * The completer of phased operations is off in the tests' services: every service shares the test schema, and
     * one would take over the checkouts other tests left in progress while its own test runs. CheckoutCrashIT
     * switches it on where it tests it.
     */
    static final String NO_COMPLETER = "--retrysafe.phases.completer.enabled=false";

    static void register(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", PaymentsDatabase::url);
        registry.add("spring.datasource.username", PaymentsDatabase::user);
        registry.add("spring.datasource.password", PaymentsDatabase::password);
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> POOL_SIZE);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
        registry.add("retrysafe.phases.completer.enabled", () -> false);
    }

    /** The same, as arguments of a service started as a process. */
    static String[] arguments() {
        return new String[] {"--spring.datasource.url=" + PaymentsDatabase.url(), "--spring.datasource.username=" + PaymentsDatabase.user(),
            "--spring.datasource.password=" + PaymentsDatabase.password(), "--spring.datasource.hikari.maximum-pool-size=" + POOL_SIZE,
            "--spring.datasource.hikari.minimum-idle=1", NO_COMPLETER};
    }

    /** An open transaction holding the account's row lock, as a concurrent writer would. */
    static final class RowLock implements AutoCloseable {
        private final Connection connection;
        private final int pid;

        RowLock(String account) throws SQLException {
            connection = PaymentsDatabase.connect();
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
            try (Connection c = PaymentsDatabase.connect(); PreparedStatement ps = c.prepareStatement(
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

    /** The checkout holds on {@code account} in {@code status} (any status when null). */
    static long holds(String account, String status) throws SQLException {
        return status == null ? PaymentsDatabase.queryLong("SELECT count(*) FROM checkout_hold WHERE account = ?", account)
                : PaymentsDatabase.queryLong("SELECT count(*) FROM checkout_hold WHERE account = ? AND status = ?",
                        account, status);
    }

    static boolean backendAlive(int pid) throws SQLException {
        return PaymentsDatabase.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid) > 0;
    }
}
