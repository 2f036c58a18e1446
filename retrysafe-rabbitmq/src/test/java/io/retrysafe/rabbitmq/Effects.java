package io.retrysafe.rabbitmq;

import com.rabbitmq.client.Delivery;
import io.retrysafe.Attempt;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The business effect of the tests' handlers: one row per handled message, deliberately without a
 * unique constraint, so that a message processed twice shows as two rows.
 */
final class Effects {
    static final String TABLE = "rs_rabbit_effect";
    /** The inbox: the RetrySafe records table of these tests. */
    static final String STORE_TABLE = "rs_rabbit_inbox";

    private Effects() {
    }

    static void createTable(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (id bigserial PRIMARY KEY, scope text NOT NULL,"
                    + " msg_id text NOT NULL, payload text NOT NULL, consumer text NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS " + TABLE + "_scope_idx ON " + TABLE + " (scope)");
        }
    }

    /** The handler's write, on the inbox's connection: inside the transaction that marks the id processed. */
    static void record(Connection c, Delivery delivery, Attempt attempt, String consumer) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE
                + " (scope, msg_id, payload, consumer) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, attempt.key().scope());
            ps.setString(2, attempt.key().value());
            ps.setString(3, new String(delivery.getBody(), StandardCharsets.UTF_8));
            ps.setString(4, consumer);
            ps.executeUpdate();
        }
    }

    /** {@code id payload consumer} of each row written in {@code scope}, in insertion order. */
    static List<String> rows(DataSource ds, String scope) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT msg_id, payload, consumer FROM " + TABLE + " WHERE scope = ? ORDER BY id")) {
            ps.setString(1, scope);
            List<String> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(rs.getString(1) + " " + rs.getString(2) + " " + rs.getString(3));
                }
            }
            return rows;
        }
    }
}
