package io.retrysafe.inbox.tck;

import io.retrysafe.Attempt;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;

/**
 * The contract's business effect: one row per handled message in a table with no unique index, so
 * that a message handled twice shows as two rows. Rows are written on the inbox transaction's
 * connection, so they exist only if the message was marked processed.
 */
public final class Effects {
    public static final String TABLE = "rs_inbox_tck_effects";
    /** What a child consumer prints once its first message committed. */
    public static final String COMMITTED = "COMMITTED";
    /** The {@code consumer} of the rows a child consumer writes. */
    public static final String CHILD = "child";

    private static final CountDownLatch NEVER = new CountDownLatch(1);

    private Effects() {
    }

    /** One handled message. */
    public record Row(String payload, String consumer, int attempt) {
    }

    static void createTable(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            String id = c.getMetaData().getDatabaseProductName().toLowerCase(java.util.Locale.ROOT).contains("postgres")
                    ? "id BIGSERIAL PRIMARY KEY" : "id BIGINT AUTO_INCREMENT PRIMARY KEY";
            st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (" + id + ", scope VARCHAR(255) NOT NULL,"
                    + " payload VARCHAR(1000) NOT NULL, consumer VARCHAR(64) NOT NULL, attempt INT NOT NULL)");
        }
    }

    /** Writes one row for {@code payload}, on {@code connection} (the inbox transaction's). */
    public static void insert(Connection connection, String scope, byte[] payload, String consumer, Attempt attempt)
            throws SQLException {
        try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + TABLE
                + " (scope, payload, consumer, attempt) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, scope);
            ps.setString(2, new String(payload, StandardCharsets.UTF_8));
            ps.setString(3, consumer);
            ps.setInt(4, attempt.number());
            ps.executeUpdate();
        }
    }

    /** The handler a child consumer runs on the channel of {@code scope}. */
    public static ContractHandler childHandler(String scope) {
        return (payload, connection, attempt) -> insert(connection, scope, payload, CHILD, attempt);
    }

    /**
     * The inbox listener of a child consumer: once a message is processed (committed), prints
     * {@value #COMMITTED} and blocks the consumer's thread for good, before the adapter acknowledges.
     */
    public static InboxListener holdAfterCommit() {
        return new InboxListener() {
            @Override
            public void onResult(Delivery delivery, InboxResult result) {
                if (result instanceof InboxResult.Processed) {
                    System.out.println(COMMITTED + " " + delivery.position());
                    System.out.flush();
                    try {
                        NEVER.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    Runtime.getRuntime().halt(4); // only if interrupted: still no acknowledgement
                }
            }
        };
    }

    static List<Row> rows(DataSource ds, String scope) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT payload, consumer, attempt FROM " + TABLE + " WHERE scope = ? ORDER BY id")) {
            ps.setString(1, scope);
            List<Row> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getString(1), rs.getString(2), rs.getInt(3)));
                }
            }
            return rows;
        }
    }
}
