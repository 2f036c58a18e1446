package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TableCatalog;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.flywaydb.core.api.MigrationInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The shipped migrations make the table that createSchema() (and so {@code initialize-schema}) makes, as
 * the database's catalog shows it, and they fit beside an application's own migrations.
 */
class MigrationCatalogIT {
    private static final String TABLE = JdbcIdempotencyStore.DEFAULT_TABLE;
    /** Flyway's default location: the application's own scripts (one, in this module's test resources). */
    private static final String APPLICATION = "classpath:db/migration";

    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void flywayAndLiquibaseMakeTheTableThatCreateSchemaMakes(ShippedMigration migration) {
        try (HikariDataSource created = migration.freshSchema("catalog_created");
                HikariDataSource flyway = migration.freshSchema("catalog_flyway");
                HikariDataSource liquibase = migration.freshSchema("catalog_liquibase")) {
            migration.store(created).createSchema();
            MigrationTool.FLYWAY.migrate(migration, flyway);
            MigrationTool.LIQUIBASE.migrate(migration, liquibase);

            List<String> expected = TableCatalog.describe(created, TABLE);
            assertThat(expected).as("catalog of the table createSchema() made").anyMatch(line -> line.contains("idem_key"))
                    .anyMatch(line -> line.contains("expires_at_idx"));
            assertThat(TableCatalog.describe(flyway, TABLE)).as("catalog of the table Flyway made")
                    .containsExactlyElementsOf(expected);
            assertThat(TableCatalog.describe(liquibase, TABLE)).as("catalog of the table Liquibase made")
                    .containsExactlyElementsOf(expected);
        }
    }

    /** The comparison above would see a table that differs in a default, a nullability or an index. */
    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void theCatalogTellsApartTablesThatDifferInADefaultANullabilityOrAnIndex(ShippedMigration migration)
            throws SQLException {
        try (HikariDataSource ds = migration.freshSchema("catalog_changed")) {
            migration.store(ds).createSchema();
            List<String> made = TableCatalog.describe(ds, TABLE);
            for (String change : new String[] {
                    "ALTER TABLE retrysafe_record ALTER COLUMN attempt SET DEFAULT 1",
                    migration.dialect == JdbcDialect.POSTGRESQL
                            ? "ALTER TABLE retrysafe_record ALTER COLUMN response_status SET NOT NULL"
                            : "ALTER TABLE retrysafe_record MODIFY response_status SMALLINT NOT NULL",
                    migration.dialect == JdbcDialect.POSTGRESQL ? "DROP INDEX retrysafe_record_expires_at_idx"
                            : "DROP INDEX retrysafe_record_expires_at_idx ON retrysafe_record"}) {
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute(change);
                }
                List<String> changed = TableCatalog.describe(ds, TABLE);
                assertThat(changed).as("catalog after " + change).isNotEqualTo(made);
                made = changed;
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void theDocumentedFlywayLocationsRunTheApplicationsMigrationsAndTheRecordTable(ShippedMigration migration) {
        try (HikariDataSource ds = migration.freshSchema("catalog_app")) {
            // The application's default location holds only its own scripts: none of the shipped ones.
            assertThat(MigrationTool.flyway(ds, APPLICATION).info().all()).extracting(MigrationInfo::getScript)
                    .containsExactly("V1__orders.sql");

            assertThat(MigrationTool.flyway(ds, APPLICATION, migration.flywayLocation()).migrate().migrations)
                    .extracting(m -> m.version + " " + m.description).containsExactly("1 orders", " retrysafe record");

            assertThat(TableCatalog.describe(ds, TABLE)).anyMatch(line -> line.contains("idem_key"));
        }
    }

    /** An application that had {@code initialize-schema} make the table, then moves to the migrations. */
    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void theMigrationsAdoptATableThatCreateSchemaMadeAndKeepItsRecords(ShippedMigration migration) {
        try (HikariDataSource ds = migration.freshSchema("catalog_adopted")) {
            MigrationTool.flyway(ds, APPLICATION).migrate();
            JdbcIdempotencyStore store = migration.store(ds);
            store.createSchema();
            IdempotencyKey key = IdempotencyKey.of("adopt", "key-1");
            assertThat(store.tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[0]), OwnerToken.random(),
                    Duration.ofMinutes(1), Duration.ofHours(1)))).isInstanceOf(ClaimResult.Claimed.class);
            List<String> before = TableCatalog.describe(ds, TABLE);

            assertThat(MigrationTool.flyway(ds, APPLICATION, migration.flywayLocation()).migrate().migrationsExecuted)
                    .as("Flyway's first run with the shipped location").isEqualTo(1);
            assertThat(MigrationTool.flyway(ds, APPLICATION, migration.flywayLocation()).migrate().migrationsExecuted)
                    .as("Flyway's second run").isZero();
            MigrationTool.LIQUIBASE.migrate(migration, ds);
            MigrationTool.LIQUIBASE.migrate(migration, ds);

            assertThat(TableCatalog.describe(ds, TABLE)).as("catalog after the migrations").containsExactlyElementsOf(before);
            assertThat(store.inspect(key)).as("the record claimed before the migrations").isPresent();
        }
    }

    @Test
    void theLiquibaseChangeSetKeepsItsIdentityWhenIncludedFromTheApplicationsChangelog() throws SQLException {
        try (HikariDataSource ds = ShippedMigration.POSTGRESQL.freshSchema("catalog_included")) {
            MigrationTool.liquibaseUpdate(ds, "db/changelog/application.yaml");
            MigrationTool.LIQUIBASE.migrate(ShippedMigration.POSTGRESQL, ds); // the same change set, named directly

            List<String> ran = new ArrayList<>();
            try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                    ResultSet rs = st.executeQuery("SELECT id, filename FROM databasechangelog ORDER BY orderexecuted")) {
                while (rs.next()) {
                    ran.add(rs.getString(1) + " " + rs.getString(2));
                }
            }
            assertThat(ran).hasSize(2).contains("retrysafe_record retrysafe/postgresql");
            assertThat(TableCatalog.describe(ds, TABLE)).anyMatch(line -> line.contains("idem_key"));
        }
    }

    @Test
    void theLiquibaseChangelogOfAnotherDatabaseStopsAndNamesTheRightOne() {
        try (HikariDataSource ds = ShippedMigration.MARIADB.freshSchema("catalog_wrong")) {
            assertThatThrownBy(() -> MigrationTool.LIQUIBASE.migrate(ShippedMigration.POSTGRESQL, ds))
                    .hasStackTraceContaining("use db/retrysafe/changelog/mariadb.xml on MariaDB");
            assertThatThrownBy(() -> TableCatalog.describe(ds, TABLE)).as("no table made").isInstanceOf(
                    IllegalStateException.class);
        }
    }
}
