package io.retrysafe.jdbc;

/** The store contract on the table that Flyway made from the shipped migration for PostgreSQL. */
class FlywayPostgresContractIT extends MigratedStoreContract {
    FlywayPostgresContractIT() {
        super(MigrationTool.FLYWAY, ShippedMigration.POSTGRESQL);
    }
}
