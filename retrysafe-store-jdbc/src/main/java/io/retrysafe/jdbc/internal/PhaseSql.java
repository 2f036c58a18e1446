package io.retrysafe.jdbc.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import io.retrysafe.sql.RecordSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The statements of phased operations on one table, in any layout: the fenced write of a step's saved
 * state, its read by the attempt holding the key, and the completer's search. The saved state belongs
 * to the record's life whose {@code created_at} it was written with: a record that expired and was
 * claimed anew has a new {@code created_at}, so an earlier life's state is not read back. Time is the
 * database's clock.
 */
public final class PhaseSql {
    private final boolean mariaDb;
    private final String advanceSql;
    private final String readSql;
    private final String abandonedSql;
    private final String countSql;

    private PhaseSql(boolean mariaDb, String advanceSql, String readSql, String abandonedSql, String countSql) {
        this.mariaDb = mariaDb;
        this.advanceSql = advanceSql;
        this.readSql = readSql;
        this.abandonedSql = abandonedSql;
        this.countSql = countSql;
    }

    /** PostgreSQL's statements, as the R2DBC store sends them too: written once, in {@link PostgresSqlText}. */
    static PhaseSql postgres(String table) {
        PostgresSqlText text = new PostgresSqlText(table, BindMarkers.QUESTION_MARKS);
        return new PhaseSql(false, text.advancePhase(), text.readPhase(), text.abandonedPhases(),
                text.countAbandonedPhases());
    }

    static PhaseSql mariaDb(String table) {
        String t = MariaDb.T;
        String idle = t + " - INTERVAL ? MICROSECOND";
        return new PhaseSql(true,
                MariaDb.bounded(1, "UPDATE " + table + " SET phase_state = ?, phase_created_at = created_at,"
                        + " lease_expires_at = " + t + " + INTERVAL ? MICROSECOND WHERE scope = ? AND idem_key = ?"
                        + " AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + t),
                "SELECT IF(phase_created_at = created_at, phase_state, NULL) FROM " + table
                        + " WHERE scope = ? AND idem_key = ? AND owner_token = ? AND status = 'IN_PROGRESS' AND expires_at > " + t,
                "SELECT scope, idem_key, fingerprint FROM " + table + RecordSql.abandonedPhases(t, idle)
                        + " ORDER BY lease_expires_at LIMIT ?",
                "SELECT count(*) FROM " + table + RecordSql.abandonedPhases(t, idle));
    }

    private Object token(OwnerToken token) {
        return mariaDb ? MariaDb.bytes(token) : token.value();
    }

    private long duration(Duration d) {
        return mariaDb ? MariaDb.micros(d) : d.toMillis();
    }

    /**
     * Saves {@code state} with the key and sets its lease to {@code leaseTtl} from now, if {@code token}
     * holds it (in progress, not expired). On the step's own connection and transaction; true if it wrote.
     */
    public boolean advance(Connection c, IdempotencyKey key, OwnerToken token, byte[] state, Duration leaseTtl)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(advanceSql)) {
            ps.setBytes(1, state);
            ps.setLong(2, duration(leaseTtl));
            ps.setString(3, key.scope());
            ps.setString(4, key.value());
            ps.setObject(5, token(token));
            return ps.executeUpdate() == 1;
        }
    }

    /** The key's saved state of this life, if {@code token} holds it and there is one. */
    public Optional<byte[]> read(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(readSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            ps.setObject(3, token(token));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.ofNullable(rs.getBytes(1)) : Optional.empty();
            }
        }
    }

    public List<PhaseJournal.Abandoned> abandoned(Connection c, Duration idleFor, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(abandonedSql)) {
            ps.setLong(1, duration(idleFor));
            ps.setInt(2, limit);
            List<PhaseJournal.Abandoned> found = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(new PhaseJournal.Abandoned(IdempotencyKey.of(rs.getString(1), rs.getString(2)),
                            Fingerprint.of(rs.getBytes(3))));
                }
            }
            return found;
        }
    }

    public long countAbandoned(Connection c, Duration idleFor) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(countSql)) {
            ps.setLong(1, duration(idleFor));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
