package io.retrysafe.spring;

import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.TransactionalR2dbcRetrySafe;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.webflux.R2dbcTransactionalExecutor;
import io.retrysafe.webflux.ReactiveIdempotentExecutor;
import io.retrysafe.webflux.ReactiveScopeResolver;
import io.retrysafe.webflux.RetrySafeWebFilter;
import io.retrysafe.webflux.WebFluxIdempotency;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.annotation.Order;
import org.springframework.transaction.ReactiveTransactionManager;

/**
 * A reactive (WebFlux) application's filter, from the same {@code retrysafe.*} properties as the servlet
 * filter's: a non-blocking store (PostgreSQL over the application's R2DBC {@code ConnectionFactory}, Redis
 * with {@code retrysafe.store.type=redis}, or the in-memory store), the engine on it ({@link AsyncRetrySafe},
 * reporting to every {@link RetrySafeListener} bean, the meters among them) and {@link RetrySafeWebFilter}
 * with the configured routes, scope and limits. Every bean backs off when the application defines its own.
 */
// By name, for both Boot lines: Boot 4's package first, then Boot 3.5's.
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class},
        afterName = {"org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration",
                "org.springframework.boot.r2dbc.autoconfigure.R2dbcTransactionManagerAutoConfiguration",
                "org.springframework.boot.autoconfigure.r2dbc.R2dbcAutoConfiguration",
                "org.springframework.boot.autoconfigure.r2dbc.R2dbcTransactionManagerAutoConfiguration"})
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@ConditionalOnClass(name = "io.retrysafe.webflux.RetrySafeWebFilter")
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(RetrySafeProperties.class)
public class RetrySafeReactiveAutoConfiguration {

    /**
     * After Spring Security's {@code WebFilterChainProxy} (order -100), which puts the principal on the
     * exchange; the same order as the servlet filter's.
     */
    public static final int FILTER_ORDER = RetrySafeWebAutoConfiguration.FILTER_ORDER;

    private static final String SPRING_SECURITY =
            "org.springframework.security.core.context.ReactiveSecurityContextHolder";

    /** PostgreSQL over the application's one R2DBC ConnectionFactory; registered before the fallback below. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.retrysafe.r2dbc.R2dbcIdempotencyStore", "io.r2dbc.spi.ConnectionFactory"})
    @ConditionalOnSingleCandidate(ConnectionFactory.class)
    @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "r2dbc", matchIfMissing = true)
    static class R2dbcStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(AsyncIdempotencyStore.class)
        R2dbcIdempotencyStore retrySafeAsyncStore(RetrySafeProperties properties, ConnectionFactory connections) {
            RetrySafeProperties.Store s = properties.store();
            if (s.layout() != RetrySafeProperties.StoreLayout.STANDARD
                    || s.keyOrder() != RetrySafeProperties.StoreKeyOrder.FIRST) {
                throw new IllegalStateException("the R2DBC store supports PostgreSQL's standard layout with the key "
                        + "first only, but retrysafe.store.layout=" + RetrySafeProperties.spelled(s.layout()) + " and "
                        + "retrysafe.store.key-order=" + RetrySafeProperties.spelled(s.keyOrder()));
            }
            R2dbcIdempotencyStore store = R2dbcIdempotencyStore.builder(connections).table(s.table())
                    .lockTimeout(s.lockTimeout()).build();
            if (s.initializeSchema()) {
                // At start-up, on the thread that starts the application, never on an event loop.
                store.createSchema().toCompletableFuture().join();
            }
            return store;
        }

        /**
         * Transactional mode, the default with the R2DBC store (as with the JDBC store on the servlet side):
         * the key, the handler's writes on the application's ConnectionFactory and the stored response
         * commit in one transaction of the application's {@code ReactiveTransactionManager}.
         */
        @Bean
        @ConditionalOnMissingBean(ReactiveIdempotentExecutor.class)
        @ConditionalOnBean(R2dbcIdempotencyStore.class)
        @ConditionalOnClass(name = {"org.springframework.r2dbc.connection.R2dbcTransactionManager",
                "io.retrysafe.webflux.R2dbcTransactionalExecutor"})
        @ConditionalOnProperty(prefix = "retrysafe", name = "mode", havingValue = "transactional", matchIfMissing = true)
        ReactiveIdempotentExecutor retrySafeReactiveExecutor(AsyncRetrySafe engine, ConnectionFactory connections,
                ObjectProvider<ReactiveTransactionManager> transactionManager) {
            ReactiveTransactionManager manager = transactionManager.getIfUnique();
            if (manager == null) {
                throw new IllegalStateException("retrysafe.mode=transactional needs one ReactiveTransactionManager for "
                        + "the application's ConnectionFactory (Boot makes an R2dbcTransactionManager with "
                        + "spring-r2dbc); set retrysafe.mode=standalone to run without one");
            }
            return new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(engine), connections, manager);
        }
    }

    /**
     * Redis, for {@code retrysafe.store.type=redis}: the blocking store's records (the same keys as
     * {@code @Idempotent} methods) through its asynchronous SPI, Lettuce's asynchronous commands.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.retrysafe.redis.RedisIdempotencyStore")
    @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "redis")
    static class RedisStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(AsyncIdempotencyStore.class)
        AsyncIdempotencyStore retrySafeAsyncStore(ObjectProvider<RedisIdempotencyStore> redis) {
            RedisIdempotencyStore store = redis.getIfUnique();
            if (store == null) {
                throw new IllegalStateException("retrysafe.store.type=redis, but the application's own IdempotencyStore "
                        + "bean is not the Redis store; define an AsyncIdempotencyStore bean for the WebFlux filter");
            }
            return store.async();
        }
    }

    /**
     * The in-memory store, when no other is configured: the blocking engine's in-memory store when there
     * is one ({@code retrysafe.store.type=memory}), so that the filter and {@code @Idempotent} methods share
     * its records.
     */
    @Bean
    @ConditionalOnMissingBean(AsyncIdempotencyStore.class)
    AsyncIdempotencyStore retrySafeAsyncStore(RetrySafeProperties properties, ObjectProvider<IdempotencyStore> blocking) {
        RetrySafeProperties.StoreType type = properties.store().type();
        if (type == RetrySafeProperties.StoreType.REDIS) {
            throw new IllegalStateException("retrysafe.store.type=redis needs io.retrysafe:retrysafe-store-redis "
                    + "(with Lettuce) on the class path");
        }
        if (type == RetrySafeProperties.StoreType.DYNAMODB) {
            throw new IllegalStateException("retrysafe.store.type=dynamodb is a blocking store, and the filter of a "
                    + "reactive application must not wait for its store: use retrysafe.store.type=r2dbc, redis or memory");
        }
        if (type == RetrySafeProperties.StoreType.R2DBC) {
            throw new IllegalStateException("retrysafe.store.type=r2dbc needs io.retrysafe:retrysafe-store-r2dbc, an "
                    + "R2DBC driver for PostgreSQL (org.postgresql:r2dbc-postgresql) and exactly one ConnectionFactory "
                    + "bean (spring.r2dbc.url), and there is none, or several without a primary one");
        }
        if (type == RetrySafeProperties.StoreType.JDBC) {
            throw new IllegalStateException("retrysafe.store.type=jdbc is a blocking store, and the filter of a "
                    + "reactive application must not wait for its store: use retrysafe.store.type=r2dbc (PostgreSQL "
                    + "over R2DBC), redis or memory");
        }
        if (blocking.getIfUnique() instanceof InMemoryIdempotencyStore memory) {
            return memory.async();
        }
        return RetrySafeAutoConfiguration.memoryStore(properties, "no R2DBC ConnectionFactory",
                "PostgreSQL over R2DBC (spring.r2dbc.url) or the Redis store").async();
    }

    @Bean
    @ConditionalOnMissingBean
    AsyncRetrySafe asyncRetrySafe(RetrySafeProperties properties, AsyncIdempotencyStore store,
            ObjectProvider<RetrySafeListener> listeners, StoredResponseProtection protection) {
        return EngineSettings.configure(AsyncRetrySafe.builder(store), properties, protection, listeners).build();
    }

    /**
     * Standalone mode: the key commits before the handler runs. The mode of every store but R2DBC's, and of
     * the R2DBC store with {@code retrysafe.mode=standalone}.
     */
    @Bean
    @ConditionalOnMissingBean
    ReactiveIdempotentExecutor retrySafeReactiveExecutor(RetrySafeProperties properties, AsyncRetrySafe engine) {
        if (properties.mode() == RetrySafeProperties.Mode.TRANSACTIONAL) {
            throw new IllegalStateException("retrysafe.mode=transactional needs the R2DBC store (key, writes and "
                    + "response commit in one database transaction) with spring-r2dbc, but the store is "
                    + engine.store().name() + "; set retrysafe.mode=standalone, or use the R2DBC store "
                    + "(retrysafe.store.type=r2dbc with one ConnectionFactory)");
        }
        return ReactiveIdempotentExecutor.standalone(engine);
    }

    /**
     * The filter, for {@code retrysafe.http.enabled} (the default); on Reactor Netty, requests it refuses itself
     * on protected routes answered with the filter's problems.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "retrysafe.http", name = "enabled", havingValue = "true", matchIfMissing = true)
    @Import(NettyRejectionsConfiguration.class)
    static class WebFilterConfiguration {

        @Bean
        @ConditionalOnMissingBean
        ReactiveScopeResolver retrySafeReactiveScopeResolver(RetrySafeProperties properties) {
            return HttpConfigurer.scope(properties, new HttpConfigurer.Scopes<>(ReactiveScopeResolver::principal,
                    ReactiveScopeResolver::header, ReactiveScopeResolver::hashedHeader, ReactiveScopeResolver::global),
                    ReactiveScopeResolver.class, SPRING_SECURITY, "docs/reactive.md#spring-boot");
        }

        @Bean
        @ConditionalOnMissingBean
        WebFluxIdempotency retrySafeWebFluxIdempotency(RetrySafeProperties properties, ReactiveScopeResolver scope,
                KeyRules keyRules, AsyncRetrySafe engine, StoredResponseProtection protection) {
            return HttpConfigurer.configure(WebFluxIdempotency.custom(), properties, scope, keyRules, engine.policy(),
                    protection).build();
        }

        /** Backs off for the application's own, also when it is declared as a plain {@code WebFilter} of that name. */
        @Bean
        @ConditionalOnMissingBean(value = RetrySafeWebFilter.class, name = "retrySafeWebFilter")
        @Order(FILTER_ORDER)
        RetrySafeWebFilter retrySafeWebFilter(WebFluxIdempotency config, ReactiveIdempotentExecutor executor,
                AsyncRetrySafe engine) {
            return new RetrySafeWebFilter(config, executor, engine.listener());
        }
    }
}
