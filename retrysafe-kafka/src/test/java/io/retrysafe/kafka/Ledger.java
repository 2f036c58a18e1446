package io.retrysafe.kafka;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * The tests' business effect: one row per handled record in a table with no unique index, so that a
 * record handled twice shows as two rows.
 */
final class Ledger {
    static final String TABLE = "rs_kafka_ledger";

    private Ledger() {
    }

    static void createTable(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (id bigserial PRIMARY KEY, topic text NOT NULL,"
                    + " message_id text, consumer text NOT NULL, payload text, partition_no int NOT NULL,"
                    + " offset_no bigint NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS " + TABLE + "_topic_idx ON " + TABLE + " (topic)");
        }
    }

    /** The handler's write, on the inbox transaction's connection. */
    static void insert(Connection c, ConsumerRecord<String, String> record, String consumer) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + TABLE
                + " (topic, message_id, consumer, payload, partition_no, offset_no) VALUES (?, ?, ?, ?, ?, ?)")) {
            ps.setString(1, record.topic());
            ps.setString(2, header(record, MessageIds.DEFAULT_HEADER));
            ps.setString(3, consumer);
            ps.setString(4, record.value());
            ps.setInt(5, record.partition());
            ps.setLong(6, record.offset());
            ps.executeUpdate();
        }
    }

    record Row(String messageId, String consumer, String payload) {
    }

    static List<Row> rows(DataSource ds, String topic) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT message_id, consumer, payload FROM " + TABLE + " WHERE topic = ? ORDER BY id")) {
            ps.setString(1, topic);
            List<Row> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getString(1), rs.getString(2), rs.getString(3)));
                }
            }
            return rows;
        }
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
