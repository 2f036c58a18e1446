package io.retrysafe.spring;

import io.retrysafe.redis.RedisIdempotencyStore;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * The {@code retrysafeStore} health contributor of the Redis store: {@code DOWN} until its connection is open with
 * its scripts loaded (each check that finds it down starts an attempt to connect, without waiting for it).
 */
public final class RetrySafeStoreHealthIndicator implements HealthIndicator {
    private final RedisIdempotencyStore store;

    public RetrySafeStoreHealthIndicator(RedisIdempotencyStore store) {
        this.store = store;
    }

    @Override
    public Health health() {
        boolean up = StoreHealth.isUp(store);
        return (up ? Health.up() : Health.down()).withDetails(StoreHealth.details(store, up)).build();
    }
}
