package io.retrysafe.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.FastPathFilter;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.servlet.FastFilterExecutor;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.webflux.ReactiveFastFilterExecutor;
import io.retrysafe.webflux.ReactiveIdempotentExecutor;
import java.util.function.UnaryOperator;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * Redis as a fast filter in front of the store, with {@code retrysafe.fast-filter.enabled=true}: a
 * {@link RedisFastFilter} on {@code retrysafe.fast-filter.redis-uri} (or the application's Lettuce
 * client bean), and every {@link IdempotentExecutor} bean wrapped in a {@link FastFilterExecutor}; in a
 * reactive application every {@code ReactiveIdempotentExecutor} bean in a {@code ReactiveFastFilterExecutor}
 * on the filter's asynchronous view, with the same decisions.
 * The store stays the source of truth; with Redis down, requests go to it.
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeWebAutoConfiguration.class,
        RetrySafeReactiveAutoConfiguration.class})
@ConditionalOnProperty(prefix = "retrysafe.fast-filter", name = "enabled", havingValue = "true")
@Conditional(RetrySafeFastFilterAutoConfiguration.AnEngine.class)
public class RetrySafeFastFilterAutoConfiguration {

    /** The blocking engine, or the non-blocking one of a reactive application (or both). */
    static final class AnEngine extends AnyNestedCondition {
        AnEngine() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnBean(RetrySafe.class)
        static final class Blocking {
        }

        @ConditionalOnBean(AsyncRetrySafe.class)
        static final class NonBlocking {
        }
    }

    /** The listener of whichever engine there is: both are built with every listener bean. */
    private static RetrySafeListener engineListener(ObjectProvider<RetrySafe> retrySafe,
            ObjectProvider<AsyncRetrySafe> asyncRetrySafe) {
        RetrySafe blocking = retrySafe.getIfUnique();
        return blocking != null ? blocking.listener() : asyncRetrySafe.getObject().listener();
    }

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
                @Qualifier("retrySafeFastFilterRedisClient") RetrySafeRedisClient client,
                ObjectProvider<RetrySafe> retrySafe, ObjectProvider<AsyncRetrySafe> asyncRetrySafe) {
            RetrySafeProperties.FastFilter f = properties.fastFilter();
            RetrySafeListener engineListener = engineListener(retrySafe, asyncRetrySafe);
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

        /** The same filter on Lettuce's asynchronous commands, for the WebFlux filter. */
        @Bean
        @ConditionalOnMissingBean(AsyncFastPath.class)
        AsyncFastPath retrySafeAsyncFastFilter(RedisFastFilter fastFilter) {
            return fastFilter.async();
        }
    }

    /** Enabled without the Redis module: say so at start-up instead of running without the filter. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("io.retrysafe.redis.RedisFastFilter")
    static class MissingRedisModuleConfiguration {

        @Bean
        @ConditionalOnMissingBean(FastPath.class)
        FastPath retrySafeFastFilter() {
            throw new IllegalStateException("retrysafe.fast-filter.enabled=true needs "
                    + "io.retrysafe:retrysafe-store-redis (with Lettuce) on the class path, "
                    + "or a FastPath bean of the application's");
        }
    }

    /** A reactive application: wraps every executor of the WebFlux filter, as below for the servlet filter. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.retrysafe.webflux.ReactiveFastFilterExecutor")
    static class ReactiveExecutorConfiguration {

        @Bean
        static BeanPostProcessor retrySafeReactiveFastFilterExecutorWrapper(ObjectProvider<AsyncFastPath> fastPath,
                ObjectProvider<AsyncRetrySafe> engine, ObjectProvider<RetrySafeProperties> properties) {
            return wrapping(ReactiveIdempotentExecutor.class, ReactiveFastFilterExecutor.class,
                    executor -> configured(ReactiveFastFilterExecutor.builder(executor, fastPath.getObject(),
                            engine.getObject()), properties.getObject().fastFilter()).build());
        }
    }

    /** Wraps every executor of the filter: the fast path answers first, the executor decides. */
    @Bean
    static BeanPostProcessor retrySafeFastFilterExecutorWrapper(ObjectProvider<FastPath> fastPath,
            ObjectProvider<RetrySafe> retrySafe, ObjectProvider<RetrySafeProperties> properties) {
        return wrapping(IdempotentExecutor.class, FastFilterExecutor.class,
                executor -> configured(FastFilterExecutor.builder(executor, fastPath.getObject(),
                        retrySafe.getObject()), properties.getObject().fastFilter()).build());
    }

    /** The fast-filter settings either executor's builder takes, set from the properties in one place. */
    private static <B extends FastPathFilter.Builder<B>> B configured(B builder,
            RetrySafeProperties.FastFilter settings) {
        return builder.replayTtl(settings.replayTtl())
                .localReplays(settings.localReplays().maxSize().toBytes(), settings.localReplays().ttl());
    }

    /** Wraps every bean of {@code type}, but one that is already a {@code wrapper}, in what {@code wrap} makes. */
    private static <T> BeanPostProcessor wrapping(Class<T> type, Class<? extends T> wrapper, UnaryOperator<T> wrap) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) throws BeansException {
                return type.isInstance(bean) && !wrapper.isInstance(bean) ? wrap.apply(type.cast(bean)) : bean;
            }
        };
    }
}
