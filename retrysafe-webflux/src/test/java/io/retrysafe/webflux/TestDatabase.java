package io.retrysafe.webflux;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactoryOptions;
import io.retrysafe.testservices.NonBlockingCheck;
import io.retrysafe.testservices.TestDatabases;
import java.util.Optional;

/**
 * The test PostgreSQL database (the one {@link TestDatabases} points the JDBC tests at) over R2DBC,
 * pooled, for transactional mode's tests. Loading this class installs BlockHound for the rest of the
 * run: a call that blocks on a Reactor or Netty thread fails with {@code BlockingOperationError}, in
 * these tests and in the standalone filter's tests that run after them. The pool has no acquire
 * timeout, for the reason the R2DBC store's tests give: a test's own bound stands in for it.
 */
final class TestDatabase {
    private static final ConnectionPool POOL;

    static {
        NonBlockingCheck.install();
        ConnectionFactoryOptions options = ConnectionFactoryOptions.parse(
                "r2dbc:" + TestDatabases.postgresJdbcUrl().substring("jdbc:".length())).mutate()
                .option(ConnectionFactoryOptions.USER, TestDatabases.postgresUser())
                .option(ConnectionFactoryOptions.PASSWORD, Optional.ofNullable(TestDatabases.postgresPassword())
                        .orElse(""))
                .build();
        POOL = new ConnectionPool(ConnectionPoolConfiguration.builder(ConnectionFactories.get(options))
                .initialSize(0).maxSize(poolSize()).build());
    }

    private TestDatabase() {
    }

    /** One pool for every test of the run, as an application has one. */
    static ConnectionPool pool() {
        return POOL;
    }

    /** At least 4: a test holds two transactions and still needs a connection to look. */
    private static int poolSize() {
        String raw = System.getenv("RETRYSAFE_TEST_POOL_SIZE");
        return Math.max(4, raw == null || raw.isBlank() ? 4 : Integer.parseInt(raw.trim()));
    }
}
