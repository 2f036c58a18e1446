package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.testservices.TableCatalog;
import io.retrysafe.testservices.TestSchemas;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * What {@code retrysafe schema print} prints, kept as the application's own Flyway migration, makes the
 * table that the shipped migration makes, as the database's catalog shows it.
 */
class SchemaPrintMigrationsIT {
    private static final String TABLE = JdbcIdempotencyStore.DEFAULT_TABLE;

    @ParameterizedTest
    @CsvSource({"postgresql, standard, postgresql", "postgresql, partitioned, postgresql-partitioned",
            "mariadb, standard, mariadb"})
    void thePrintedDdlMakesTheTableOfTheShippedMigration(String dialect, String layout, String shipped,
            @TempDir Path migrations) throws IOException {
        StringWriter out = new StringWriter();
        CommandLine cli = new CommandLine(new RetrySafeCli(Map.of(), Prompter.NONE));
        cli.setOut(new PrintWriter(out, true));
        assertThat(cli.execute("schema", "print", "--dialect", dialect, "--layout", layout)).isZero();
        Files.writeString(migrations.resolve("V1__retrysafe_record.sql"), out.toString());

        String schema = "cli_" + shipped.replace('-', '_');
        try (HikariDataSource printed = fresh(dialect, schema + "_printed");
                HikariDataSource migrated = fresh(dialect, schema + "_shipped")) {
            Flyway.configure().dataSource(printed).locations("filesystem:" + migrations).load().migrate();
            Flyway.configure().dataSource(migrated).locations("classpath:db/retrysafe/migration/" + shipped).load()
                    .migrate();

            List<String> expected = TableCatalog.describe(migrated, TABLE);
            assertThat(expected).anyMatch(line -> line.contains("idem_key"));
            assertThat(TableCatalog.describe(printed, TABLE)).containsExactlyElementsOf(expected);
        }
    }

    private static HikariDataSource fresh(String dialect, String name) {
        return dialect.equals("postgresql") ? TestSchemas.postgres("rs_" + name) : TestSchemas.mariadb(name);
    }
}
