package io.retrysafe.spring;

import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The details of the {@code retrysafe} health contributor, apart from Spring Boot's health API, whose
 * package differs between Boot lines (Boot 4 moved it into {@code spring-boot-health}): each line's
 * {@link RetrySafeFastFilterHealthIndicator} reports these, always as {@code UP}.
 */
final class FastFilterHealth {

    private FastFilterHealth() {
    }

    /** The breaker, a {@code PING} to Redis, and whether requests use the fast filter ({@code degraded}). */
    static Map<String, Object> details(RedisFastFilter fastFilter) {
        BreakerState breaker = fastFilter.breakerState();
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("fastFilter", fastFilter.name());
        details.put("breaker", breaker.name());
        boolean answers;
        try {
            Duration latency = fastFilter.ping();
            details.put("redis", "PONG");
            details.put("pingMillis", latency.toNanos() / 1_000_000.0);
            answers = true;
        } catch (RuntimeException e) {
            details.put("redis", "no answer: " + e.getMessage());
            answers = false;
        }
        details.put("degraded", !answers || breaker != BreakerState.CLOSED);
        return details;
    }
}
