package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import io.retrysafe.tck.PhaseJournalContract;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

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

    /**
     * The step's connection breaks under it (here: closed by the step): the step is the store's failure, a
     * {@link StoreUnavailableException} the HTTP front doors answer with 503, never a driver exception that
     * would be a 500, and nothing of it commits.
     */
    @Test
    void aStepWhoseConnectionBreaksIsTheStoresFailureAndCommitsNothing() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken token = OwnerToken.random();
        assertThat(store().tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[] {1}), token,
                Duration.ofSeconds(30), Duration.ofHours(1)))).isInstanceOf(ClaimResult.Claimed.class);
        String marker = "m-" + UUID.randomUUID();

        assertThatThrownBy(() -> journal().advance(key, token, Duration.ofSeconds(30), c -> {
            write(c, marker);
            c.close();
            return new byte[] {1};
        })).isInstanceOf(StoreUnavailableException.class);

        assertThat(count(marker)).as("the broken step's write").isZero();
        assertThat(journal().read(key, token)).as("its state").isEmpty();
    }
}
