package io.retrysafe.spring;

import io.retrysafe.redis.RedisIdempotencyStore;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code retrysafeStore} health contributor for the Redis store, when Spring Boot's health support
 * ({@code spring-boot-actuator}) is on the class path; {@code management.health.retrysafe-store.enabled=false} turns it off.
 */
@AutoConfiguration(after = RetrySafeAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.boot.actuate.health.HealthIndicator",
        "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator",
        "io.retrysafe.redis.RedisIdempotencyStore"})
@ConditionalOnBean(RedisIdempotencyStore.class)
@ConditionalOnEnabledHealthIndicator("retrysafe-store")
public class RetrySafeStoreHealthAutoConfiguration {

    /** The bean's name makes the contributor's: {@code retrysafeStore}. */
    @Bean(name = "retrysafeStoreHealthIndicator")
    @ConditionalOnMissingBean(name = "retrysafeStoreHealthIndicator")
    RetrySafeStoreHealthIndicator retrysafeStoreHealthIndicator(RedisIdempotencyStore store) {
        return new RetrySafeStoreHealthIndicator(store);
    }
}
