package io.retrysafe.gateway;

import io.lettuce.core.RedisClient;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.testservices.TestRedis;
import java.util.Map;
import java.util.UUID;

/**
 * The gateway's protected routes on Redis, under a key prefix of this run's own: protected requests with a key, a
 * caller and a small body take the non-blocking path, the rest the servlet filter.
 */
class GatewayRedisIT extends ProtectedRouteContract {
    private final String prefix = "gw-it-" + UUID.randomUUID() + ":";
    private RedisClient redis;
    private RedisIdempotencyStore store;

    @Override
    String store() {
        return TestStores.redis(prefix);
    }

    @Override
    Map<String, String> env() {
        return Map.of();
    }

    @Override
    IdempotencyStore records() {
        redis = RedisClient.create(TestRedis.standaloneUri());
        store = RedisIdempotencyStore.builder(redis).keyPrefix(prefix).build();
        return store;
    }

    @Override
    void closeRecords() {
        if (store != null) {
            store.close();
        }
        if (redis != null) {
            redis.shutdown();
        }
    }
}
