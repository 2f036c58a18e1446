package io.retrysafe.spring;

import io.retrysafe.redis.RedisIdempotencyStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code retrysafeStore} health contributor's reading of the Redis store, apart from Spring Boot's health API,
 * whose package differs between Boot lines: each line's {@link RetrySafeStoreHealthIndicator} reports it. Down until
 * the store's connection is open with its scripts loaded: an instance whose store cannot answer would refuse every
 * protected request, so a load balancer should not send it any.
 */
final class StoreHealth {

    private StoreHealth() {
    }

    /** Whether the store is connected; when it is not, an attempt to connect is started, not waited for. */
    static boolean isUp(RedisIdempotencyStore store) {
        return store.isConnected() || store.connect(Duration.ZERO);
    }

    static Map<String, Object> details(RedisIdempotencyStore store, boolean up) {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("store", store.name());
        details.put("redis", up ? "connected" : "not connected");
        return details;
    }
}
