package io.retrysafe.examples.paymentsquarkus;

import io.agroal.api.AgroalDataSource;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Creates the business tables at start-up ({@code schema.sql} of the payments examples, every statement
 * idempotent, with three demo accounts); RetrySafe's table is
 * created by the extension ({@code retrysafe.store.initialize-schema=true}). A production service ships both in
 * its migrations instead.
 */
@ApplicationScoped
public class Tables {

    void create(@Observes StartupEvent started, AgroalDataSource dataSource) throws IOException, SQLException {
        String ddl;
        try (InputStream in = Tables.class.getResourceAsStream("/schema.sql")) {
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute(ddl);
        }
    }
}
