package io.retrysafe.jdbc;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.PhaseJournal;
import io.retrysafe.tck.PhaseJournalContract;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;

/**
 * The phase contract on a JDBC store: the application's write in a step is a row of a table of its own, on
 * the step's connection.
 */
abstract class JdbcPhaseJournalContract extends PhaseJournalContract<Connection> {
    private static final String WRITES = "rs_phase_writes_it";

    /** Creates the store's schema and the application's table; call once per class. */
    static JdbcPhaseJournal prepare(JdbcIdempotencyStore store) {
        store.createSchema();
        try (Connection c = store.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + WRITES + " (marker varchar(100) NOT NULL)");
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return JdbcPhaseJournal.of(store);
    }

    protected abstract JdbcPhaseJournal jdbcJournal();

    @Override
    protected IdempotencyStore store() {
        return jdbcJournal().store();
    }

    @Override
    protected PhaseJournal<Connection> journal() {
        return jdbcJournal();
    }

    @Override
    protected void write(Connection transaction, String marker) throws SQLException {
        try (PreparedStatement ps = transaction.prepareStatement("INSERT INTO " + WRITES + " (marker) VALUES (?)")) {
            ps.setString(1, marker);
            ps.executeUpdate();
        }
    }

    @Override
    protected long count(String marker) {
        DataSource ds = jdbcJournal().store().dataSource();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + WRITES + " WHERE marker = ?")) {
            ps.setString(1, marker);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
