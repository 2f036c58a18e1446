package io.retrysafe.jdbc;

/**
 * The store contract on the table that Flyway made from the shipped migration for PostgreSQL partitioned by
 * expiry day.
 */
class FlywayPostgresPartitionedContractIT extends MigratedStoreContract {
    FlywayPostgresPartitionedContractIT() {
        super(MigrationTool.FLYWAY, ShippedMigration.POSTGRESQL_PARTITIONED);
    }
}
