package io.retrysafe.spring;

import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.springframework.test.context.DynamicPropertyRegistry;

/** What the starter's Spring Boot tests share: the application's PostgreSQL, and a handler held until told. */
final class TestApps {
    private TestApps() {
    }

    /** The application's DataSource on the test PostgreSQL, and the starter's record table {@code records}. */
    static void postgres(DynamicPropertyRegistry registry, String records) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("retrysafe.store.table", () -> records);
    }

    static void sql(DataSource database, String... statements) throws SQLException {
        try (Connection c = database.getConnection(); Statement s = c.createStatement()) {
            for (String statement : statements) {
                s.execute(statement);
            }
        }
    }

    /** Holds a handler until the test counts {@code latch} down; a test that never does fails the handler. */
    static void holdUntil(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let the held request finish");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
