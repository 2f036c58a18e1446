package io.retrysafe.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/** Meters for the engine when Micrometer is there; the engine picks the listener up as a bean. */
@AutoConfiguration(before = RetrySafeAutoConfiguration.class,
        afterName = {"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
                "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, MicrometerRetrySafeListener.class})
@ConditionalOnBean(MeterRegistry.class)
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
public class RetrySafeMicrometerAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MicrometerRetrySafeListener retrySafeMicrometerListener(MeterRegistry registry, RetrySafeProperties properties) {
        return MicrometerRetrySafeListener.of(registry, properties.name());
    }
}
