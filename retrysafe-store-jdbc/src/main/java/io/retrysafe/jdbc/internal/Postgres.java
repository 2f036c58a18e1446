package io.retrysafe.jdbc.internal;

import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.sql.PostgresSqlText;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;

/** What every PostgreSQL statement type shares; the clock is {@link PostgresSqlText#CLOCK}. */
final class Postgres {
    static final String LOCK_NOT_AVAILABLE = PostgresSqlText.LOCK_NOT_AVAILABLE;
    static final String UNIQUE_VIOLATION = "23505";
    static final String SERIALIZATION_FAILURE = "40001";
    static final String T = PostgresSqlText.CLOCK;

    private Postgres() {
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
        ps.setString(1, PostgresSqlText.lockTimeout(lockTimeout));
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
