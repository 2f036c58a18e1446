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
        bindClaimRow(ps, request, 2);
        ps.execute(); // first result: set_config
        if (!ps.getMoreResults()) {
            throw new SQLException("claim statement returned no result for its " + claimPart);
        }
        return ps.getResultSet();
    }

    /**
     * Runs {@link PostgresSqlText#claimStatement()}, the claim as one statement: binds the row's parameters,
     * then the lock bound (parameter 7), and returns its result.
     */
    static ResultSet runClaimStatement(PreparedStatement ps, ClaimRequest request, Duration lockTimeout)
            throws SQLException {
        bindClaimRow(ps, request, 1);
        ps.setString(7, PostgresSqlText.lockTimeout(lockTimeout));
        return ps.executeQuery();
    }

    /** The claim's row: scope, key, fingerprint, token, lease and retention in milliseconds, from {@code first}. */
    private static void bindClaimRow(PreparedStatement ps, ClaimRequest request, int first) throws SQLException {
        ps.setString(first, request.key().scope());
        ps.setString(first + 1, request.key().value());
        ps.setBytes(first + 2, request.fingerprint().bytes());
        ps.setObject(first + 3, request.token().value());
        ps.setLong(first + 4, request.leaseTtl().toMillis());
        ps.setLong(first + 5, request.retention().toMillis());
    }
}
