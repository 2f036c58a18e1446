package io.retrysafe.nats;

import io.nats.client.Message;
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
    static final String TABLE = "rs_nats_effect";
    /** The inbox: the RetrySafe records table of these tests. */
    static final String STORE_TABLE = "rs_nats_inbox";

    private Effects() {
    }

    static void createTable(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (id bigserial PRIMARY KEY, scope text NOT NULL,"
                    + " msg_id text NOT NULL, stream_seq bigint NOT NULL, payload text NOT NULL,"
                    + " attempt int NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS " + TABLE + "_scope_idx ON " + TABLE + " (scope)");
        }
    }

    /** The handler's write, on the processor's connection: inside the transaction that marks the id processed. */
    static void record(Connection c, Message msg, Attempt attempt) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE
                + " (scope, msg_id, stream_seq, payload, attempt) VALUES (?, ?, ?, ?, ?)")) {
            ps.setString(1, attempt.key().scope());
            ps.setString(2, attempt.key().value());
            ps.setLong(3, msg.metaData().streamSequence());
            ps.setString(4, new String(msg.getData(), StandardCharsets.UTF_8));
            ps.setInt(5, attempt.number());
            ps.executeUpdate();
        }
    }

    /** The message ids of the rows written in {@code scope}, one entry per row, in insertion order. */
    static List<String> ids(DataSource ds, String scope) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT msg_id FROM " + TABLE + " WHERE scope = ? ORDER BY id")) {
            ps.setString(1, scope);
            List<String> ids = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ids.add(rs.getString(1));
                }
            }
            return ids;
        }
    }

    /** The payloads of the rows written in {@code scope}, in insertion order. */
    static List<String> payloads(DataSource ds, String scope) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT payload FROM " + TABLE + " WHERE scope = ? ORDER BY id")) {
            ps.setString(1, scope);
            List<String> payloads = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    payloads.add(rs.getString(1));
                }
            }
            return payloads;
        }
    }
}
