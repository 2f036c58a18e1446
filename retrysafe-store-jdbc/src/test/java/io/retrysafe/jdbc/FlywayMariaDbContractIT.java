package io.retrysafe.jdbc;

/** The store contract on the table that Flyway made from the shipped migration for MariaDB. */
class FlywayMariaDbContractIT extends MigratedStoreContract {
    FlywayMariaDbContractIT() {
        super(MigrationTool.FLYWAY, ShippedMigration.MARIADB);
    }
}
