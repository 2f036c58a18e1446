package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.util.Map;

/** The service pointed at the test database ({@link PaymentsDatabase}) over R2DBC. */
final class ServiceDatabase {
    /** Connections a service under test may hold: the server is shared, and its connections are few. */
    static final int POOL_SIZE = 8;

    private ServiceDatabase() {
    }

    /** The service's properties that point it at the test database. */
    static Map<String, String> properties() {
        return Map.of("spring.r2dbc.url", PaymentsDatabase.r2dbcUrl(), "spring.r2dbc.username", PaymentsDatabase.user(),
                "spring.r2dbc.password", PaymentsDatabase.password(), "spring.r2dbc.pool.max-size",
                Integer.toString(POOL_SIZE), "spring.r2dbc.pool.initial-size", "1");
    }

    /** The same, as the arguments of a service started as a process. */
    static String[] arguments() {
        return properties().entrySet().stream().map(p -> "--" + p.getKey() + "=" + p.getValue()).toArray(String[]::new);
    }
}
