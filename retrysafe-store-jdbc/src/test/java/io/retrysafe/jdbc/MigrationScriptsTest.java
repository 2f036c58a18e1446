package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The shipped migrations are built from the schema scripts: they run what createSchema() runs. */
class MigrationScriptsTest {

    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void theFlywayScriptIsTheSchemaScriptForTheDefaultTable(ShippedMigration migration) {
        String script = ShippedMigration.resource(migration.flywayScript());
        JdbcIdempotencyStore store = migration.store(new org.postgresql.ds.PGSimpleDataSource());

        assertThat(script).as("placeholders left in " + migration.flywayScript()).doesNotContain("${")
                .contains("CREATE TABLE IF NOT EXISTS retrysafe_record (");
        assertThat(JdbcIdempotencyStore.statements(script)).as("statements of " + migration.flywayScript())
                .containsExactly(JdbcIdempotencyStore.statements(store.schema()));
    }

    @ParameterizedTest
    @EnumSource(ShippedMigration.class)
    void theLiquibaseChangelogRunsTheFlywayScriptAgainWhenItChanges(ShippedMigration migration) {
        assertThat(ShippedMigration.resource(migration.liquibaseChangelog()))
                .contains("<sqlFile path=\"" + migration.flywayScript() + "\"")
                .contains("runOnChange=\"true\"")
                .contains("<dbms type=\"" + migration.dialect.name().toLowerCase(java.util.Locale.ROOT) + "\"/>");
    }
}
