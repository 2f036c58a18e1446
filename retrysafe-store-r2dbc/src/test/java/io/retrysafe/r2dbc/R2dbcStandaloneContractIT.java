package io.retrysafe.r2dbc;

import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.tck.AsyncStandaloneStoreContract;
import org.junit.jupiter.api.BeforeAll;

/** The asynchronous store contract on PostgreSQL through R2DBC, races included, with BlockHound watching the event loop. */
class R2dbcStandaloneContractIT extends AsyncStandaloneStoreContract {
    static final String TABLE = "rs_r2dbc_contract_it";
    private static R2dbcIdempotencyStore store;

    @BeforeAll
    static void createTable() throws Exception {
        store = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table(TABLE).build();
        store.createSchema().toCompletableFuture().get();
    }

    @Override
    protected AsyncIdempotencyStore asyncStore() {
        return store;
    }
}
