package io.retrysafe.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The engine and its store: the application's DataSource (PostgreSQL or MariaDB) when there is
 * one, in transactional mode by default; Redis with {@code retrysafe.store.type=redis} (standalone
 * mode); the in-memory store otherwise or when {@code retrysafe.store.type=memory}. Every bean backs
 * off when the application defines its own.
 */
// By name, for both Boot lines: Boot 4's package first, then Boot 3.5's.
@AutoConfiguration(afterName = {"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
        "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration"})
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(RetrySafeProperties.class)
public class RetrySafeAutoConfiguration {
    private static final System.Logger LOG = System.getLogger(RetrySafeAutoConfiguration.class.getName());

    /** The JDBC store on the application's one DataSource; registered before the in-memory fallback below. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "javax.sql.DataSource")
    @ConditionalOnSingleCandidate(DataSource.class)
    @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "jdbc", matchIfMissing = true)
    static class JdbcStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(IdempotencyStore.class)
        JdbcIdempotencyStore retrySafeStore(RetrySafeProperties properties, DataSource dataSource) {
            RetrySafeProperties.Store s = properties.store();
            JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(dataSource).table(s.table())
                    .lockTimeout(s.lockTimeout()).layout(s.layout() == RetrySafeProperties.StoreLayout.PARTITIONED
                            ? JdbcLayout.PARTITIONED_BY_EXPIRY_DAY : JdbcLayout.STANDARD);
            Integer maxWaiting = s.maxWaitingClaims() != null ? s.maxWaitingClaims() : halfThePool(dataSource);
            if (maxWaiting != null) {
                builder.maxWaitingClaims(maxWaiting);
            }
            JdbcIdempotencyStore store = builder.build();
            if (s.initializeSchema()) {
                store.createSchema();
            }
            return store;
        }

        /**
         * Half the pool's maximum size, when the DataSource tells it (HikariCP's {@code getMaximumPoolSize},
         * read reflectively: the pool is the application's choice, not a dependency of the starter).
         */
        private static Integer halfThePool(DataSource dataSource) {
            try {
                Object max = dataSource.getClass().getMethod("getMaximumPoolSize").invoke(dataSource);
                return max instanceof Integer size && size > 0 ? Math.max(1, size / 2) : null;
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }
    }

    /**
     * The Redis store (standalone mode), for {@code retrysafe.store.type=redis}: on
     * {@code retrysafe.store.redis.uri}, or the application's Lettuce client bean.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.retrysafe.redis.RedisIdempotencyStore", "io.lettuce.core.RedisClient"})
    @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "redis")
    @ConditionalOnMissingBean(IdempotencyStore.class)
    static class RedisStoreConfiguration {

        @Bean
        @ConditionalOnMissingBean(name = "retrySafeStoreRedisClient")
        RetrySafeRedisClient retrySafeStoreRedisClient(RetrySafeProperties properties,
                ObjectProvider<RedisClient> clients, ObjectProvider<RedisClusterClient> clusterClients) {
            return RetrySafeRedisClient.resolve("retrysafe.store.redis.uri", properties.store().redis().uri(),
                    "retrysafe.store.type=redis", ClientOptions.create(), clients, clusterClients);
        }

        @Bean(destroyMethod = "close")
        RedisIdempotencyStore retrySafeStore(RetrySafeProperties properties,
                @Qualifier("retrySafeStoreRedisClient") RetrySafeRedisClient client) {
            RetrySafeProperties.Redis r = properties.store().redis();
            return client.store().keyPrefix(r.keyPrefix()).commandTimeout(r.commandTimeout()).build();
        }
    }

    @Bean
    @ConditionalOnMissingBean(IdempotencyStore.class)
    InMemoryIdempotencyStore retrySafeMemoryStore(RetrySafeProperties properties) {
        if (properties.store().type() == RetrySafeProperties.StoreType.JDBC) {
            throw new IllegalStateException("retrysafe.store.type=jdbc needs exactly one DataSource bean, and there is "
                    + "none, or several without a primary one");
        }
        if (properties.store().type() == RetrySafeProperties.StoreType.REDIS) {
            throw new IllegalStateException("retrysafe.store.type=redis needs io.retrysafe:retrysafe-store-redis "
                    + "(with Lettuce) on the class path");
        }
        LOG.log(Level.WARNING, () -> "[" + properties.name() + "] no DataSource: keys are kept in this process's "
                + "memory, which protects one instance only (a retry that reaches another instance, or this one "
                + "after a restart, runs again); use the JDBC or Redis store for more than one instance");
        RetrySafeProperties.Store s = properties.store();
        return InMemoryIdempotencyStore.builder().clock(Clock.systemUTC()).maxEntries(s.maxEntries())
                .maxBytes(s.maxBytes().toBytes()).scopeSharePercent(s.scopeSharePercent()).build();
    }

    @Bean
    @ConditionalOnMissingBean
    KeyRules retrySafeKeyRules(RetrySafeProperties properties) {
        return KeyRules.custom().minLength(properties.key().minLength()).maxLength(properties.key().maxLength()).build();
    }

    /**
     * AES-GCM over {@code retrysafe.at-rest.keys}, or {@link StoredResponseProtection#NONE} without keys.
     * An application bean of its own (to add redaction, say) replaces it.
     */
    @Bean
    @ConditionalOnMissingBean
    StoredResponseProtection retrySafeStoredResponseProtection(RetrySafeProperties properties) {
        return AtRestKeys.protection(properties.atRest());
    }

    @Bean
    @ConditionalOnMissingBean
    RetrySafe retrySafe(RetrySafeProperties properties, IdempotencyStore store,
            ObjectProvider<RetrySafeListener> listeners, StoredResponseProtection protection) {
        if (properties.mode() == RetrySafeProperties.Mode.TRANSACTIONAL && !(store instanceof JdbcIdempotencyStore)) {
            throw new IllegalStateException("retrysafe.mode=transactional needs the JDBC store (key, writes and "
                    + "response commit in one database transaction), but the store is " + store.name() + " ("
                    + store.getClass().getSimpleName() + "); set retrysafe.mode=standalone, or use the JDBC store "
                    + "(retrysafe.store.type=jdbc with one DataSource)");
        }
        RetrySafeProperties.Policy p = properties.policy();
        OperationPolicy policy = OperationPolicy.custom().retention(p.retention()).leaseTtl(p.leaseTtl())
                .waitForResult(p.waitForResult()).retryAfter(p.retryAfter())
                .protection(properties.atRest().enabled() ? protection : StoredResponseProtection.NONE).build();
        RetrySafe.Builder builder = RetrySafe.builder(store).name(properties.name()).policy(policy)
                .failOpen(properties.failOpen()).completionAttempts(properties.completion().attempts())
                .completionBackoff(properties.completion().backoff());
        List<RetrySafeListener> all = listeners.orderedStream().toList();
        if (!all.isEmpty()) {
            builder.listener(all.size() == 1 ? all.get(0) : new CompositeListener(all));
        }
        return builder.build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(JdbcIdempotencyStore.class)
    @ConditionalOnProperty(prefix = "retrysafe", name = "mode", havingValue = "transactional", matchIfMissing = true)
    TransactionalRetrySafe transactionalRetrySafe(RetrySafe retrySafe, RetrySafeProperties properties) {
        return TransactionalRetrySafe.of(retrySafe, properties.store().keyOrder() == RetrySafeProperties.StoreKeyOrder.LAST
                ? KeyOrder.LAST : KeyOrder.FIRST);
    }
}
