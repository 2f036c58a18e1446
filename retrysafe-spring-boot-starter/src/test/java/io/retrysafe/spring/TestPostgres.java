package io.retrysafe.spring;

import io.retrysafe.testservices.TestDatabases;
import org.springframework.test.context.DynamicPropertyRegistry;

/** The properties that point a test application's DataSource and record table at the test PostgreSQL. */
final class TestPostgres {
    private TestPostgres() {
    }

    static void register(DynamicPropertyRegistry registry, String recordsTable) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("retrysafe.store.table", () -> recordsTable);
    }
}
