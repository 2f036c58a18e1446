package io.retrysafe.jdbc.internal;

import io.retrysafe.spi.ClaimRequest;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;

/**
 * What every PostgreSQL statement type shares. {@code statement_timestamp()} is the clock: it is the
 * database's, and unlike {@code now()} it does not stand still over a long transaction.
 */
final class Postgres {
    static final String LOCK_NOT_AVAILABLE = "55P03";
    static final String UNIQUE_VIOLATION = "23505";
    static final String T = "statement_timestamp()";

    private Postgres() {
    }

    /** The value for {@code set_config('lock_timeout', ?, true)}: milliseconds, at least one (0 is no bound). */
    static String lockTimeout(Duration lockTimeout) {
        return Long.toString(Math.max(1, lockTimeout.toMillis()));
    }

    static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }

    /**
     * Runs a layout's claim statement: binds its parameters (the lock bound, scope, key, fingerprint,
     * token, lease and retention in milliseconds) and returns its second result, the claim's own (the
     * first is {@code set_config}'s).
     */
    static ResultSet runClaim(PreparedStatement ps, ClaimRequest request, Duration lockTimeout, String claimPart)
            throws SQLException {
        ps.setString(1, lockTimeout(lockTimeout));
        ps.setString(2, request.key().scope());
        ps.setString(3, request.key().value());
        ps.setBytes(4, request.fingerprint().bytes());
        ps.setObject(5, request.token().value());
        ps.setLong(6, request.leaseTtl().toMillis());
        ps.setLong(7, request.retention().toMillis());
        ps.execute(); // first result: set_config
        if (!ps.getMoreResults()) {
            throw new SQLException("claim statement returned no result for its " + claimPart);
        }
        return ps.getResultSet();
    }
}
