package io.retrysafe.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestRedis;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The store contract on the local standalone Redis ({@code RETRYSAFE_REDIS_URL}), under a key prefix of its own. */
class RedisStandaloneContractIT extends StandaloneStoreContract {
    private static final String PREFIX = RedisTestKeys.uniquePrefix();
    /** Longer than the default: on a loaded build machine a 1 MiB write among 32 racing threads can take seconds. */
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static RedisClient client;
    private static RedisIdempotencyStore store;

    @BeforeAll
    static void connect() {
        client = RedisClient.create(TestRedis.standaloneUri());
        store = RedisIdempotencyStore.builder(client).keyPrefix(PREFIX).commandTimeout(TIMEOUT).build();
    }

    @AfterAll
    static void cleanUp() {
        if (client == null) {
            return;
        }
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisTestKeys.deleteAll(c.sync(), PREFIX); // the shared server keeps nothing of ours, and loses nothing else
        } finally {
            store.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }

    @Override
    protected boolean expiresRecordsItself() {
        return true;
    }
}
