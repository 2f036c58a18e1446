package io.retrysafe.jdbc;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract on PostgreSQL with the table partitioned by expiry day, standalone: records
 * move between day partitions as they are claimed and completed with different retentions.
 */
class PostgresPartitionedStandaloneContractIT extends StandaloneStoreContract {
    static final String TABLE = "rs_pg_part_contract_it";
    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void createTable() {
        store = partitionedStore(JdbcIdempotencyStore.builder(TestDatabases.postgres()));
    }

    /** The partitioned table with today's partition and the next two days', as the job leaves it. */
    static JdbcIdempotencyStore partitionedStore(JdbcIdempotencyStore.Builder builder) {
        JdbcIdempotencyStore s = builder.dialect(JdbcDialect.POSTGRESQL).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY)
                .table(TABLE).build();
        s.createSchema();
        s.partitions().daysAhead(2).build().maintain();
        return s;
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }
}
