package io.retrysafe.jdbc.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.RecordSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The operators' statements of one database for one table ({@code JdbcAdmin}, the CLI, and a store's
 * {@code inspect}): reads and an operator's release, never on the request path. A dialect gives the
 * statements' text and how it reads a timestamp; running them and reading their rows is done here.
 * Rarely run, so the statements that vary with their arguments are built per call; every value is a
 * bind parameter.
 */
public abstract class OperatorSql {
    protected final String table;
    private final String inspectSql;

    /** @param now the database's clock in this dialect's SQL */
    protected OperatorSql(String table, String now) {
        this.table = table;
        inspectSql = RecordSql.inspect(table, now, BindMarkers.QUESTION_MARKS);
    }

    /** A timestamp column as an instant. */
    protected abstract Instant instant(ResultSet rs, int column) throws SQLException;

    /** The live record of {@code key}; a record past {@code expires_at} is absent. */
    public Optional<IdempotencyRecord> inspect(Connection c, IdempotencyKey key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(inspectSql)) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new IdempotencyRecord(key, Fingerprint.of(rs.getBytes(1)),
                        RecordStatus.valueOf(rs.getString(2)), rs.getInt(3), instant(rs, 4), instant(rs, 5),
                        instant(rs, 6), instant(rs, 7), Optional.ofNullable(Rows.response(rs, 8))));
            }
        }
    }

    /**
     * The listing's statement: scope, key, status, attempt, created, lease and expiry of live records
     * created at least the first parameter ago ({@link #olderThan}), with {@code byStatus} of the status
     * in the second, ordered oldest first, at most the last parameter.
     */
    protected abstract String listSql(boolean byStatus);

    /** The value {@link #listSql}'s age parameter takes. */
    protected abstract long olderThan(Duration olderThan);

    /**
     * Live records created at least {@code olderThan} ago, of {@code status} (any if null), oldest
     * first, at most {@code limit}. A plain read: it never waits for a lock.
     */
    public List<AdminRow> list(Connection c, RecordStatus status, Duration olderThan, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(listSql(status != null))) {
            int i = 1;
            ps.setLong(i++, olderThan(olderThan));
            if (status != null) {
                ps.setString(i++, status.name());
            }
            ps.setInt(i, limit);
            List<AdminRow> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new AdminRow(rs.getString(1), rs.getString(2), RecordStatus.valueOf(rs.getString(3)),
                            rs.getInt(4), instant(rs, 5), instant(rs, 6), instant(rs, 7)));
                }
            }
            return rows;
        }
    }

    /**
     * An operator's release: marks the live record FAILED if it is IN_PROGRESS, whoever holds it, and
     * ends its lease; with {@code attempt}, only if it is still that attempt. Waits at most
     * {@code lockTimeout} for a transaction holding the row. True if it changed.
     */
    public abstract boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException;

    /** The counts' statement: the eight columns of {@link RecordCounts}, in its order, in one row. */
    protected abstract String countsSql();

    /** Live records by status and by age, and expired records not purged yet, in one statement. */
    public RecordCounts counts(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(countsSql()); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new RecordCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                    rs.getLong(6), rs.getLong(7), rs.getLong(8));
        }
    }

    /** The count of expired records' statement. */
    protected abstract String countExpiredSql();

    /** Records past {@code expires_at}: what a purge would delete now (rows locked by others aside). */
    public long countExpired(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(countExpiredSql()); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The table's size on disk in bytes, its indexes included, as the database reports it. */
    public abstract long tableBytes(Connection c) throws SQLException;
}
