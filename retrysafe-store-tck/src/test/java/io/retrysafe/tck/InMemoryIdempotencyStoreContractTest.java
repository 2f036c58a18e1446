package io.retrysafe.tck;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;

/**
 * The contract against the reference store. One store serves every test, as a shared database
 * would: the contract's random scopes keep the tests apart.
 */
class InMemoryIdempotencyStoreContractTest extends StandaloneStoreContract {
    private static final InMemoryIdempotencyStore STORE = new InMemoryIdempotencyStore();

    @Override
    protected IdempotencyStore store() {
        return STORE;
    }
}
