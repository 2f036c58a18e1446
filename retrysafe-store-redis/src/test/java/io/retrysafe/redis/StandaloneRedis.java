package io.retrysafe.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.testservices.TestRedis;
import java.time.Duration;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A client of the local standalone Redis ({@code RETRYSAFE_REDIS_URL}) and a store on it under a key
 * prefix of its own; {@link #close()} deletes every key under the prefix (the shared server keeps
 * nothing of ours, and loses nothing else), closes the store and shuts the client down. Registered
 * as a test class's static extension, it closes after the class's last test; creating it connects
 * nothing (the store connects on first use).
 */
final class StandaloneRedis implements AutoCloseable, AfterAllCallback {
    final String prefix = RedisTestKeys.uniquePrefix();
    final RedisClient client;
    final RedisIdempotencyStore store;

    /** {@code commandTimeout}: longer than the default where a loaded build machine runs large writes in races. */
    StandaloneRedis(Duration commandTimeout) {
        client = RedisClient.create(TestRedis.standaloneUri());
        store = RedisIdempotencyStore.builder(client).keyPrefix(prefix).commandTimeout(commandTimeout).build();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    @Override
    public void close() {
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisTestKeys.deleteAll(c.sync(), prefix);
        } finally {
            store.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
