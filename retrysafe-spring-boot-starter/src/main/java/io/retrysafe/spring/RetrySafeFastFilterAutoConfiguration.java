package io.retrysafe.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.RetrySafe;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.servlet.FastFilterExecutor;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.RetrySafeListener;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Redis as a fast filter in front of the store, with {@code retrysafe.fast-filter.enabled=true}: a
 * {@link RedisFastFilter} on {@code retrysafe.fast-filter.redis-uri} (or the application's Lettuce
 * client bean), and every {@link IdempotentExecutor} bean wrapped in a {@link FastFilterExecutor}.
 * The store stays the source of truth; with Redis down, requests go to it.
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeWebAutoConfiguration.class})
@ConditionalOnProperty(prefix = "retrysafe.fast-filter", name = "enabled", havingValue = "true")
@ConditionalOnBean(RetrySafe.class)
public class RetrySafeFastFilterAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.retrysafe.redis.RedisFastFilter", "io.lettuce.core.RedisClient"})
    @ConditionalOnMissingBean(FastPath.class)
    static class RedisFastFilterConfiguration {

        /**
         * A client the starter makes rejects commands while disconnected, so that a request does not
         * wait for the timeout while Redis is down (the breaker opens as fast).
         */
        @Bean
        @ConditionalOnMissingBean(name = "retrySafeFastFilterRedisClient")
        RetrySafeRedisClient retrySafeFastFilterRedisClient(RetrySafeProperties properties,
                ObjectProvider<RedisClient> clients, ObjectProvider<RedisClusterClient> clusterClients) {
            ClientOptions options = ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build();
            return RetrySafeRedisClient.resolve("retrysafe.fast-filter.redis-uri", properties.fastFilter().redisUri(),
                    "retrysafe.fast-filter.enabled=true", options, clients, clusterClients);
        }

        @Bean(destroyMethod = "close")
        RedisFastFilter retrySafeFastFilter(RetrySafeProperties properties,
                @Qualifier("retrySafeFastFilterRedisClient") RetrySafeRedisClient client, RetrySafe retrySafe) {
            RetrySafeProperties.FastFilter f = properties.fastFilter();
            RetrySafeListener engineListener = retrySafe.listener();
            RedisFastFilter.Builder b = client.fastFilter().keyPrefix(f.keyPrefix()).timeout(f.timeout())
                    .markerTtl(f.markerTtl() == null ? properties.policy().leaseTtl() : f.markerTtl())
                    .failureThreshold(f.failureThreshold()).openBackoff(f.openBackoff())
                    .maxOpenBackoff(f.maxOpenBackoff());
            String name = RedisFastFilter.DEFAULT_NAME;
            b.listener(new RedisFastFilter.Listener() {
                @Override
                public void onFailure(String operation, RuntimeException error) {
                    // Counted with the store errors (retrysafe.store.errors{store=redis-fast-filter}).
                    engineListener.onStoreError(name, operation, error);
                }
            });
            return b.build();
        }
    }

    /** Enabled without the Redis module: say so at start-up instead of running without the filter. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("io.retrysafe.redis.RedisFastFilter")
    static class MissingRedisModuleConfiguration {

        @Bean
        @ConditionalOnMissingBean(FastPath.class)
        FastPath retrySafeFastFilter() {
            throw new IllegalStateException("retrysafe.fast-filter.enabled=true needs io.retrysafe:retrysafe-store-redis "
                    + "(with Lettuce) on the class path, or a FastPath bean of the application's");
        }
    }

    /** Wraps every executor of the filter: the fast path answers first, the executor decides. */
    @Bean
    static BeanPostProcessor retrySafeFastFilterExecutorWrapper(ObjectProvider<FastPath> fastPath,
            ObjectProvider<RetrySafe> retrySafe, ObjectProvider<RetrySafeProperties> properties) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
                if (bean instanceof IdempotentExecutor executor && !(bean instanceof FastFilterExecutor)) {
                    return FastFilterExecutor.builder(executor, fastPath.getObject(), retrySafe.getObject())
                            .replayTtl(properties.getObject().fastFilter().replayTtl()).build();
                }
                return bean;
            }
        };
    }
}
