package io.retrysafe.jdbc;

/** The store contract on the table that Liquibase made from the shipped migration for MariaDB. */
class LiquibaseMariaDbContractIT extends MigratedStoreContract {
    LiquibaseMariaDbContractIT() {
        super(MigrationTool.LIQUIBASE, ShippedMigration.MARIADB);
    }
}
