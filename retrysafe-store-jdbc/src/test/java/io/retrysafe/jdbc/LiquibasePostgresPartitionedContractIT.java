package io.retrysafe.jdbc;

/**
 * The store contract on the table that Liquibase made from the shipped migration for PostgreSQL partitioned by
 * expiry day.
 */
class LiquibasePostgresPartitionedContractIT extends MigratedStoreContract {
    LiquibasePostgresPartitionedContractIT() {
        super(MigrationTool.LIQUIBASE, ShippedMigration.POSTGRESQL_PARTITIONED);
    }
}
