package io.retrysafe.spring;

import io.retrysafe.redis.RedisFastFilter;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * The {@code retrysafe} health contributor: the fast filter's breaker and a {@code PING} to its
 * Redis. Always {@code UP}: without Redis the application still answers every request correctly
 * (through the store, only slower), so a Redis outage must not take instances out of a load
 * balancer; the details say whether Redis answers ({@code redis}) and whether requests use it
 * ({@code breaker}, {@code degraded}).
 */
public final class RetrySafeFastFilterHealthIndicator implements HealthIndicator {
    private final RedisFastFilter fastFilter;

    public RetrySafeFastFilterHealthIndicator(RedisFastFilter fastFilter) {
        this.fastFilter = fastFilter;
    }

    @Override
    public Health health() {
        return Health.up().withDetails(FastFilterHealth.details(fastFilter)).build();
    }
}
