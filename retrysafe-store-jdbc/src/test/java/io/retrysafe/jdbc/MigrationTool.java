package io.retrysafe.jdbc;

import java.sql.Connection;
import javax.sql.DataSource;
import liquibase.Scope;
import liquibase.command.CommandScope;
import liquibase.command.core.UpdateCommandStep;
import liquibase.command.core.helpers.DbUrlConnectionArgumentsCommandStep;
import liquibase.database.Database;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.flywaydb.core.Flyway;

/** The migration tools, run as an application runs them at start-up: on its data source's default schema. */
enum MigrationTool {
    FLYWAY {
        @Override
        void migrate(ShippedMigration migration, DataSource ds) {
            flyway(ds, migration.flywayLocation()).migrate();
        }
    },
    LIQUIBASE {
        @Override
        void migrate(ShippedMigration migration, DataSource ds) {
            liquibaseUpdate(ds, migration.liquibaseChangelog());
        }
    };

    abstract void migrate(ShippedMigration migration, DataSource ds);

    static Flyway flyway(DataSource ds, String... locations) {
        return Flyway.configure().dataSource(ds).locations(locations).load();
    }

    static void liquibaseUpdate(DataSource ds, String changelog) {
        try (Connection c = ds.getConnection()) {
            Database database = DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(c));
            Scope.child(Scope.Attr.resourceAccessor.name(), new ClassLoaderResourceAccessor(),
                    () -> new CommandScope(UpdateCommandStep.COMMAND_NAME)
                            .addArgumentValue(DbUrlConnectionArgumentsCommandStep.DATABASE_ARG, database)
                            .addArgumentValue(UpdateCommandStep.CHANGELOG_FILE_ARG, changelog)
                            .execute());
        } catch (Exception e) {
            throw new IllegalStateException("Liquibase update of " + changelog + " failed: " + e, e);
        }
    }
}
