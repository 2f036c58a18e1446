package io.retrysafe.jdbc;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/** The store contract on PostgreSQL in standalone mode: every call its own committed transaction. */
class PostgresStandaloneContractIT extends StandaloneStoreContract {
    static final String TABLE = "rs_pg_contract_it";
    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void createTable() {
        store = JdbcIdempotencyStore.builder(TestDatabases.postgres()).dialect(JdbcDialect.POSTGRESQL).table(TABLE)
                .build();
        store.createSchema();
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }
}
