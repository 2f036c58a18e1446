package io.retrysafe.dynamodb;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The store contract on the test server, in a table of its own. On dynalite, which never deletes
 * expired items, every expiry test of the contract runs on the store's own rule: an item past its
 * expiry is absent although it is still there.
 */
class DynamoDbContractIT extends StandaloneStoreContract {
    @RegisterExtension
    static final DynamoTable table = new DynamoTable();

    @Override
    protected IdempotencyStore store() {
        return table.store;
    }

    @Override
    protected boolean expiresRecordsItself() {
        return true;
    }
}
