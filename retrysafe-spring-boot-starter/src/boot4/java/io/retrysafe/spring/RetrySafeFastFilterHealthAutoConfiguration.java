package io.retrysafe.spring;

import io.retrysafe.redis.RedisFastFilter;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code retrysafe} health contributor for the fast filter, when Spring Boot's health support
 * ({@code spring-boot-health}, part of the actuator) is on the class path;
 * {@code management.health.retrysafe.enabled=false} turns it off.
 */
@AutoConfiguration(after = RetrySafeFastFilterAutoConfiguration.class)
@ConditionalOnClass(name = {"org.springframework.boot.health.contributor.HealthIndicator",
        "io.retrysafe.redis.RedisFastFilter"})
@ConditionalOnBean(RedisFastFilter.class)
@ConditionalOnEnabledHealthIndicator("retrysafe")
public class RetrySafeFastFilterHealthAutoConfiguration {

    /** The bean's name makes the contributor's: {@code retrysafe}. */
    @Bean(name = "retrysafeHealthIndicator")
    @ConditionalOnMissingBean(name = "retrysafeHealthIndicator")
    RetrySafeFastFilterHealthIndicator retrysafeHealthIndicator(RedisFastFilter fastFilter) {
        return new RetrySafeFastFilterHealthIndicator(fastFilter);
    }
}
