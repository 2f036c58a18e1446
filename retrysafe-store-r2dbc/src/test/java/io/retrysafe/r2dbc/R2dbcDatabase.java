package io.retrysafe.r2dbc;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.retrysafe.testservices.NonBlockingCheck;
import io.retrysafe.testservices.TestDatabases;
import java.net.URI;

/**
 * The test PostgreSQL database (the one {@link TestDatabases} points the JDBC tests at) through
 * R2DBC, pooled. Loading this class installs BlockHound: from then on, a call that blocks on a
 * Reactor or Netty thread (the driver's event loop, where the store's stages complete and the engine
 * goes on) fails with {@code BlockingOperationError} instead of passing unnoticed.
 *
 * <p>The pool has no acquire timeout. With one, the contract's races hung: the pool schedules and
 * cancels its timeout task on Reactor's parallel scheduler from the event loop, and that scheduler's
 * queue lock stopped handing over (BlockHound throws its error from inside a thread's wait for a
 * lock, which leaves the lock's queue of waiters broken for good). A test's own bound (the
 * contract's, Awaitility's) stands in for it.
 */
final class R2dbcDatabase {
    private static final ConnectionPool POOL;
    private static final PostgresqlConnectionFactory UNPOOLED;

    static {
        URI url = URI.create(TestDatabases.postgresJdbcUrl().substring("jdbc:".length()));
        PostgresqlConnectionConfiguration.Builder config = PostgresqlConnectionConfiguration.builder()
                .host(url.getHost())
                .port(url.getPort() < 0 ? 5432 : url.getPort())
                .database(url.getPath().substring(1))
                .username(TestDatabases.postgresUser());
        String password = TestDatabases.postgresPassword();
        if (password != null && !password.isEmpty()) {
            config.password(password);
        }
        UNPOOLED = new PostgresqlConnectionFactory(config.build());
        POOL = new ConnectionPool(ConnectionPoolConfiguration.builder(UNPOOLED)
                .initialSize(0)
                .maxSize(poolSize())
                .build());
        NonBlockingCheck.install();
    }

    private R2dbcDatabase() {
    }

    /** One pool for every test of the run, as an application has one. */
    static ConnectionPool pool() {
        return POOL;
    }

    /** Connections of their own, for a test that may leave one broken. */
    static PostgresqlConnectionFactory unpooled() {
        return UNPOOLED;
    }

    /** At least 4: a transactional test holds two transactions and still needs connections to look. */
    private static int poolSize() {
        String raw = System.getenv("RETRYSAFE_TEST_POOL_SIZE");
        return Math.max(4, raw == null || raw.isBlank() ? 4 : Integer.parseInt(raw.trim()));
    }
}
