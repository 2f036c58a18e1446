package io.retrysafe.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * The store contract on a table that a migration tool made from a shipped migration, in a schema of
 * its own, with the store on the default table as an application configures it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class MigratedStoreContract extends StandaloneStoreContract {
    private final MigrationTool tool;
    private final ShippedMigration migration;
    private HikariDataSource pool;
    private JdbcIdempotencyStore store;

    MigratedStoreContract(MigrationTool tool, ShippedMigration migration) {
        this.tool = tool;
        this.migration = migration;
    }

    @BeforeAll
    void migrate() {
        pool = migration.freshSchema(tool.name().toLowerCase(java.util.Locale.ROOT) + "_contract");
        tool.migrate(migration, pool);
        store = migration.store(pool);
        if (migration.layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
            store.partitions().daysAhead(2).build().maintain(); // as the purge job leaves it
        }
    }

    @AfterAll
    void close() {
        pool.close();
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }
}
