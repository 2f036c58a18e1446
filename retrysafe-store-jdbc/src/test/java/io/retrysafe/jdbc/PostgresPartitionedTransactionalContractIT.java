package io.retrysafe.jdbc;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The transactional store contract on PostgreSQL with the table partitioned by expiry day. A duplicate
 * waits on the key's advisory lock, not on a row.
 */
class PostgresPartitionedTransactionalContractIT extends JdbcTransactionalContract {
    private static Opened db;

    @BeforeAll
    static void openDatabase() {
        db = postgres(null, pool -> {
            return PostgresPartitionedStandaloneContractIT.partitionedStore(
                    JdbcIdempotencyStore.builder(pool).lockTimeout(Duration.ofSeconds(1)));
        });
    }

    @AfterAll
    static void closeDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @Override
    protected Opened opened() {
        return db;
    }
}
