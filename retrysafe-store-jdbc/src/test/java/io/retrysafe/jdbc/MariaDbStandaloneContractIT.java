package io.retrysafe.jdbc;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/** The store contract on MariaDB in standalone mode: every call its own short transaction. */
class MariaDbStandaloneContractIT extends StandaloneStoreContract {
    static final String TABLE = "rs_mariadb_it";

    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void createTable() {
        store = JdbcIdempotencyStore.builder(TestDatabases.mariadb()).dialect(JdbcDialect.MARIADB).table(TABLE).build();
        store.createSchema();
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }
}
