package io.retrysafe.spring;

import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.springframework.test.context.DynamicPropertyRegistry;

/** The test PostgreSQL as an application's {@code spring.datasource.*}, with its own records table. */
final class SpringPostgres {
    private SpringPostgres() {
    }

    static void register(DynamicPropertyRegistry registry, String recordsTable) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("retrysafe.store.table", () -> recordsTable);
    }

    static void drop(String table) throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + table);
        }
    }
}
