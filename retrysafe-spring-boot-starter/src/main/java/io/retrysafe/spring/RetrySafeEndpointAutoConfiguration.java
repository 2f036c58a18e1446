package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code idempotency} actuator endpoint ({@link IdempotencyEndpoint}), when the actuator is on the
 * class path. Available like any endpoint: on by default, reachable over HTTP once listed in
 * {@code management.endpoints.web.exposure.include}; {@code management.endpoint.idempotency.access=none}
 * turns it off.
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeWebAutoConfiguration.class})
@ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
@ConditionalOnBean(RetrySafe.class)
@ConditionalOnAvailableEndpoint(IdempotencyEndpoint.class)
public class RetrySafeEndpointAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    IdempotencyEndpoint retrySafeIdempotencyEndpoint(RetrySafe retrySafe, KeyRules keyRules,
            ObjectProvider<HttpIdempotency> http, ObjectProvider<TransactionalRetrySafe> transactional,
            ObjectProvider<StandaloneRoutes> standaloneRoutes, ObjectProvider<RetrySafeCompleterScheduler> completer) {
        Duration lockTimeout = transactional.getIfAvailable() != null
                && retrySafe.store() instanceof JdbcIdempotencyStore jdbc ? jdbc.lockTimeout() : null;
        StandaloneRoutes routes = standaloneRoutes.getIfAvailable();
        return new IdempotencyEndpoint(retrySafe, keyRules, http.getIfAvailable(), lockTimeout,
                routes == null ? route -> false : routes::isStandalone, completer.getIfAvailable());
    }
}
