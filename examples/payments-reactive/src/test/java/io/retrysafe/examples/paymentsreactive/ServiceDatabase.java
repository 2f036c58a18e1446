package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;

/** The service pointed at the test database ({@link PaymentsDatabase}) over R2DBC. */
final class ServiceDatabase {
    /** Connections a service under test may hold: the server is shared, and its connections are few. */
    static final int POOL_SIZE = 8;

    private ServiceDatabase() {
    }

    /** The service's arguments (or, without the leading {@code --}, properties) that point it at the test database. */
    static String[] arguments() {
        return new String[] {"--spring.r2dbc.url=" + PaymentsDatabase.r2dbcUrl(),
            "--spring.r2dbc.username=" + PaymentsDatabase.user(), "--spring.r2dbc.password=" + PaymentsDatabase.password(),
            "--spring.r2dbc.pool.max-size=" + POOL_SIZE, "--spring.r2dbc.pool.initial-size=1"};
    }
}
