package io.retrysafe.tck;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.spi.AsyncIdempotencyStore;

/** The asynchronous contract against the reference store's asynchronous view, one store for every test. */
class InMemoryAsyncStoreContractTest extends AsyncStandaloneStoreContract {
    private static final InMemoryIdempotencyStore STORE = new InMemoryIdempotencyStore();

    @Override
    protected AsyncIdempotencyStore asyncStore() {
        return STORE.async();
    }
}
