package io.retrysafe.jdbc.internal;

import io.retrysafe.spi.OwnerToken;
import java.nio.ByteBuffer;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * What every MariaDB statement type shares. {@code UTC_TIMESTAMP(6)} is the clock: the database's,
 * read once per statement, and stored in {@code DATETIME(6)} columns, which no session time zone
 * converts.
 *
 * <p>Waits on another transaction's row lock are bounded per statement with {@code SET STATEMENT
 * innodb_lock_wait_timeout = n FOR …} (whole seconds, at least 1), so the bound never leaks into the
 * session. Past it, InnoDB rolls back the statement only (error 1205).
 */
final class MariaDb {
    /** ER_LOCK_WAIT_TIMEOUT, SQLState HY000: only the statement was rolled back (innodb_rollback_on_timeout=OFF). */
    static final int LOCK_WAIT_TIMEOUT = 1205;
    static final String T = "UTC_TIMESTAMP(6)";

    private MariaDb() {
    }

    /** The statement with its lock waits bounded to {@code seconds}, for this statement only. */
    static String bounded(long seconds, String sql) {
        return "SET STATEMENT innodb_lock_wait_timeout = " + seconds + " FOR " + sql;
    }

    /** MariaDB counts the lock wait in whole seconds: rounded up, at least one. */
    static long lockWaitSeconds(Duration lockTimeout) {
        long seconds = lockTimeout.getSeconds() + (lockTimeout.getNano() > 0 ? 1 : 0);
        return Math.max(1, seconds);
    }

    /** The token as BINARY(16): the UUID's 128 bits, most significant first. */
    static byte[] bytes(OwnerToken token) {
        return ByteBuffer.allocate(16).putLong(token.value().getMostSignificantBits())
                .putLong(token.value().getLeastSignificantBits()).array();
    }

    static long micros(Duration d) {
        return Math.multiplyExact(d.toMillis(), 1000L);
    }

    /** DATETIME columns hold UTC wall-clock times; read them without the JVM's time zone. */
    static Instant instant(ResultSet rs, int column) throws SQLException {
        LocalDateTime t = rs.getObject(column, LocalDateTime.class);
        return t == null ? null : t.toInstant(ZoneOffset.UTC);
    }
}
