package io.retrysafe.examples.gateway;

import io.retrysafe.testservices.Sql;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The Python upstream's own SQLite database, read and written by the test as the service's operator
 * would: accounts made for a test, payments (effects) and executions counted.
 */
record UpstreamDatabase(Path file) {

    private Connection connect() throws SQLException {
        Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
        try (var s = c.createStatement()) {
            // The upstream writes at the same time: wait for its lock instead of failing.
            s.execute("PRAGMA busy_timeout = 30000");
        }
        return c;
    }

    /** A fresh account with this balance (the upstream must have created its tables). */
    String newAccount(long balance) throws SQLException {
        String id = "it-" + UUID.randomUUID().toString().substring(0, 18);
        update("INSERT INTO account (id, label, balance) VALUES (?, 'Test account', ?)", id, balance);
        return id;
    }

    /** Payments booked on the account: one per execution that charged it. */
    long payments(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM payment WHERE account = ?", account);
    }

    /** Executions of POST /payments for the account that reached the booking, whatever they answered. */
    long executions(String account) throws SQLException {
        return queryLong("SELECT count(*) FROM execution WHERE account = ?", account);
    }

    long balance(String account) throws SQLException {
        return queryLong("SELECT balance FROM account WHERE id = ?", account);
    }

    long queryLong(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.queryLong(c, sql, args);
        }
    }

    int update(String sql, Object... args) throws SQLException {
        try (Connection c = connect()) {
            return Sql.update(c, sql, args);
        }
    }
}
