package io.retrysafe.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.tck.TransactionalStoreContract;
import io.retrysafe.testservices.TestDatabases;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The store contract on PostgreSQL with the table partitioned by expiry day, in transactional mode:
 * each claim is the first statement of an open transaction, its completion commits it, and its
 * release or abandonment rolls it back. A duplicate waits on the key's advisory lock, not on a row.
 */
class PostgresPartitionedTransactionalContractIT extends TransactionalStoreContract {
    private static HikariDataSource pool;
    private static TransactionalStoreAdapter adapter;

    @BeforeAll
    static void createTable() {
        // A holder keeps its connection until it completes, so the races need one per thread.
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(40);
        config.setPoolName("pg-partitioned-transactional-contract");
        pool = new HikariDataSource(config);
        JdbcIdempotencyStore store = PostgresPartitionedStandaloneContractIT.partitionedStore(
                JdbcIdempotencyStore.builder(pool).lockTimeout(Duration.ofSeconds(1)));
        adapter = new TransactionalStoreAdapter(store, pool);
    }

    @AfterAll
    static void close() {
        adapter.close();
        pool.close();
    }

    @Override
    protected IdempotencyStore store() {
        return adapter;
    }

    @Override
    protected void abandon(OwnerToken token) {
        adapter.abandon(token);
    }
}
