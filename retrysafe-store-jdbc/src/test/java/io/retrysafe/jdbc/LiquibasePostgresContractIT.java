package io.retrysafe.jdbc;

/** The store contract on the table that Liquibase made from the shipped migration for PostgreSQL. */
class LiquibasePostgresContractIT extends MigratedStoreContract {
    LiquibasePostgresContractIT() {
        super(MigrationTool.LIQUIBASE, ShippedMigration.POSTGRESQL);
    }
}
