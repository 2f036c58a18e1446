package io.retrysafe.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.testservices.TestSchemas;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import javax.sql.DataSource;

/** The record table's migrations as the jar ships them, one per database and layout (docs/schema.md). */
enum ShippedMigration {
    POSTGRESQL(JdbcDialect.POSTGRESQL, JdbcLayout.STANDARD, "postgresql"),
    POSTGRESQL_PARTITIONED(JdbcDialect.POSTGRESQL, JdbcLayout.PARTITIONED_BY_EXPIRY_DAY, "postgresql-partitioned"),
    MARIADB(JdbcDialect.MARIADB, JdbcLayout.STANDARD, "mariadb");

    final JdbcDialect dialect;
    final JdbcLayout layout;
    final String directory;

    ShippedMigration(JdbcDialect dialect, JdbcLayout layout, String directory) {
        this.dialect = dialect;
        this.layout = layout;
        this.directory = directory;
    }

    /** The Flyway location, as the docs give it for {@code spring.flyway.locations}. */
    String flywayLocation() {
        return "classpath:db/retrysafe/migration/" + directory;
    }

    String flywayScript() {
        return "db/retrysafe/migration/" + directory + "/R__retrysafe_record.sql";
    }

    /** The Liquibase changelog, as the docs give it for {@code spring.liquibase.change-log} or an include. */
    String liquibaseChangelog() {
        return "db/retrysafe/changelog/" + directory + ".xml";
    }

    /** The store on the default table, the one the migrations make. */
    JdbcIdempotencyStore store(DataSource ds) {
        return JdbcIdempotencyStore.builder(ds).dialect(dialect).layout(layout).build();
    }

    /** A fresh, empty schema of this database; {@code name} tells the caller's schemas apart. */
    HikariDataSource freshSchema(String name) {
        String schema = name + "_" + directory.replace('-', '_');
        return dialect == JdbcDialect.POSTGRESQL ? TestSchemas.postgres("rs_" + schema) : TestSchemas.mariadb(schema);
    }

    static String resource(String path) {
        try (InputStream in = ShippedMigration.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("not on the classpath: " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
