package io.retrysafe.spring;

import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import java.time.Duration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

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
        BreakerState breaker = fastFilter.breakerState();
        Health.Builder health = Health.up().withDetail("fastFilter", fastFilter.name())
                .withDetail("breaker", breaker.name());
        boolean answers;
        try {
            Duration latency = fastFilter.ping();
            health.withDetail("redis", "PONG").withDetail("pingMillis", latency.toNanos() / 1_000_000.0);
            answers = true;
        } catch (RuntimeException e) {
            health.withDetail("redis", "no answer: " + e.getMessage());
            answers = false;
        }
        return health.withDetail("degraded", !answers || breaker != BreakerState.CLOSED).build();
    }
}
