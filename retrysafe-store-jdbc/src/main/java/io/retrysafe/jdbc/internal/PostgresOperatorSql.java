package io.retrysafe.jdbc.internal;

import static io.retrysafe.jdbc.internal.Postgres.T;

import io.retrysafe.IdempotencyKey;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;

/** PostgreSQL's operator statements; the release and the size depend on the layout. */
public final class PostgresOperatorSql extends OperatorSql {
    private final PostgresLayout layout;

    public PostgresOperatorSql(String table, PostgresLayout layout) {
        super(table, T);
        this.layout = layout;
    }

    @Override
    protected Instant instant(ResultSet rs, int column) throws SQLException {
        return Postgres.instant(rs.getTimestamp(column));
    }

    @Override
    protected String listSql(boolean byStatus) {
        return "SELECT scope, idem_key, status, attempt, created_at, lease_expires_at, expires_at FROM " + table
                + " WHERE expires_at > " + T + " AND created_at <= " + T + " - ? * interval '1 millisecond'"
                + (byStatus ? " AND status = ?" : "") + " ORDER BY created_at, scope, idem_key LIMIT ?";
    }

    @Override
    protected long olderThan(Duration olderThan) {
        return olderThan.toMillis();
    }

    @Override
    public boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout)
            throws SQLException {
        return layout.forceRelease(c, key, attempt, lockTimeout);
    }

    @Override
    protected String countsSql() {
        // interval '24 hours', not '1 day': a day of timestamptz arithmetic follows the session's DST changes.
        String live = "expires_at > " + T;
        return "SELECT count(*) FILTER (WHERE " + live + " AND status = 'IN_PROGRESS'),"
                + " count(*) FILTER (WHERE " + live + " AND status = 'COMPLETED'),"
                + " count(*) FILTER (WHERE " + live + " AND status = 'FAILED'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at > " + T + " - interval '1 hour'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '1 hour'"
                + " AND created_at > " + T + " - interval '24 hours'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '24 hours'"
                + " AND created_at > " + T + " - interval '168 hours'),"
                + " count(*) FILTER (WHERE " + live + " AND created_at <= " + T + " - interval '168 hours'),"
                + " count(*) FILTER (WHERE expires_at <= " + T + ") FROM " + table;
    }

    @Override
    protected String countExpiredSql() {
        return "SELECT count(*) FROM " + table + " WHERE expires_at <= " + T;
    }

    @Override
    public long tableBytes(Connection c) throws SQLException {
        return layout.tableBytes(c);
    }
}
