package io.retrysafe.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.dynamodb.DynamoDbIdempotencyStore;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Clock;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnNotWebApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;

/**
 * The engine and its store: the application's DataSource (PostgreSQL or MariaDB) when there is
 * one, in transactional mode by default; Redis with {@code retrysafe.store.type=redis} and DynamoDB with
 * {@code retrysafe.store.type=dynamodb} (standalone mode); the in-memory store otherwise or when {@code retrysafe.store.type=memory}. In a reactive
 * application the filter's engine is {@link RetrySafeReactiveAutoConfiguration}'s, and this blocking one
 * is made only on a store configured for it (a DataSource, Redis, or {@code type=memory}). Every bean
 * backs off when the application defines its own.
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
            RedisIdempotencyStore.Builder builder = client.store().keyPrefix(r.keyPrefix())
                    .commandTimeout(r.commandTimeout());
            if (r.waitForReplicas() > 0) {
                builder.waitForReplicas(r.waitForReplicas(), r.replicaTimeout());
            }
            RedisIdempotencyStore store = builder.build();
            // Ready before the server takes requests: the first ones must not wait for the connection.
            if (!store.connect(r.startupWait())) {
                LOG.log(Level.WARNING, () -> "[" + store.name() + "] not connected to Redis within "
                        + r.startupWait() + " (retrysafe.store.redis.startup-wait); the store's health is DOWN and "
                        + "requests are answered 503 until it connects");
            }
            return store;
        }
    }

    /**
     * The DynamoDB store (standalone mode), for {@code retrysafe.store.type=dynamodb}: on the application's
     * {@code DynamoDbClient} bean, or on one made from {@code retrysafe.store.dynamodb.*} with the SDK's default
     * credentials.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.retrysafe.dynamodb.DynamoDbIdempotencyStore",
            "software.amazon.awssdk.services.dynamodb.DynamoDbClient"})
    @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "dynamodb")
    @ConditionalOnMissingBean(IdempotencyStore.class)
    static class DynamoDbStoreConfiguration {

        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(DynamoDbClient.class)
        DynamoDbClient retrySafeDynamoDbClient(RetrySafeProperties properties) {
            RetrySafeProperties.Dynamodb d = properties.store().dynamodb();
            DynamoDbClientBuilder builder = DynamoDbClient.builder().httpClient(UrlConnectionHttpClient.create())
                    .overrideConfiguration(c -> c.apiCallTimeout(d.callTimeout()));
            if (d.endpoint() != null) {
                builder.endpointOverride(d.endpoint());
            }
            if (d.region() != null) {
                builder.region(Region.of(d.region()));
            }
            return builder.build();
        }

        @Bean
        DynamoDbIdempotencyStore retrySafeStore(RetrySafeProperties properties, DynamoDbClient client) {
            RetrySafeProperties.Dynamodb d = properties.store().dynamodb();
            DynamoDbIdempotencyStore store = DynamoDbIdempotencyStore.builder(client).tableName(d.tableName())
                    .maxClockSkew(d.maxClockSkew()).maxResponseSize(Math.toIntExact(d.maxResponseSize().toBytes()))
                    .build();
            if (d.createTable()) {
                store.createTableIfAbsent();
            }
            return store;
        }
    }

    @Bean
    @ConditionalOnMissingBean(IdempotencyStore.class)
    @Conditional(BlockingMemoryStore.class)
    InMemoryIdempotencyStore retrySafeMemoryStore(RetrySafeProperties properties) {
        if (properties.store().type() == RetrySafeProperties.StoreType.R2DBC) {
            throw new IllegalStateException("retrysafe.store.type=r2dbc is the store of a reactive (WebFlux) "
                    + "application, and this one is not; use retrysafe.store.type=jdbc with a DataSource");
        }
        if (properties.store().type() == RetrySafeProperties.StoreType.JDBC) {
            throw new IllegalStateException("retrysafe.store.type=jdbc needs exactly one DataSource bean, and there is "
                    + "none, or several without a primary one");
        }
        if (properties.store().type() == RetrySafeProperties.StoreType.REDIS) {
            throw new IllegalStateException("retrysafe.store.type=redis needs io.retrysafe:retrysafe-store-redis "
                    + "(with Lettuce) on the class path");
        }
        if (properties.store().type() == RetrySafeProperties.StoreType.DYNAMODB) {
            throw new IllegalStateException("retrysafe.store.type=dynamodb needs io.retrysafe:retrysafe-store-dynamodb "
                    + "on the class path");
        }
        return memoryStore(properties, "no DataSource", "the JDBC, Redis or DynamoDB store");
    }

    /**
     * The in-memory store of {@code retrysafe.store.*}, with a warning that it protects one instance.
     *
     * @param why why the store is the in-memory one, for the warning
     * @param instead what to use for more than one instance
     */
    static InMemoryIdempotencyStore memoryStore(RetrySafeProperties properties, String why, String instead) {
        LOG.log(Level.WARNING, () -> "[" + properties.name() + "] " + why + ": keys are kept in this process's "
                + "memory, which protects one instance only (a retry that reaches another instance, or this one "
                + "after a restart, runs again); use " + instead + " for more than one instance");
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

    /**
     * The in-memory fallback of the blocking engine: in every application but a reactive one, where the
     * filter has a non-blocking store of its own ({@link RetrySafeReactiveAutoConfiguration}) and a blocking
     * store is made only when one is configured ({@code retrysafe.store.type=memory}, {@code jdbc} or
     * {@code redis}).
     */
    static final class BlockingMemoryStore extends AnyNestedCondition {
        BlockingMemoryStore() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnNotWebApplication
        static final class NotWeb {
        }

        @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
        static final class Servlet {
        }

        @ConditionalOnProperty(prefix = "retrysafe.store", name = "type", havingValue = "memory")
        static final class Memory {
        }
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(IdempotencyStore.class)
    RetrySafe retrySafe(RetrySafeProperties properties, IdempotencyStore store,
            ObjectProvider<RetrySafeListener> listeners, StoredResponseProtection protection) {
        if (properties.mode() == RetrySafeProperties.Mode.TRANSACTIONAL && !(store instanceof JdbcIdempotencyStore)) {
            throw new IllegalStateException("retrysafe.mode=transactional needs the JDBC store (key, writes and "
                    + "response commit in one database transaction), but the store is " + store.name() + " ("
                    + store.getClass().getSimpleName() + "); set retrysafe.mode=standalone, or use the JDBC store "
                    + "(retrysafe.store.type=jdbc with one DataSource)");
        }
        return EngineSettings.configure(RetrySafe.builder(store), properties, protection, listeners).build();
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(JdbcIdempotencyStore.class)
    @ConditionalOnProperty(prefix = "retrysafe", name = "mode", havingValue = "transactional", matchIfMissing = true)
    TransactionalRetrySafe transactionalRetrySafe(RetrySafe retrySafe, RetrySafeProperties properties) {
        return TransactionalRetrySafe.of(retrySafe, switch (properties.store().keyOrder()) {
            case FIRST -> KeyOrder.FIRST;
            case LAST -> KeyOrder.LAST;
            case LAST_NO_LOOKUP -> KeyOrder.LAST_NO_LOOKUP;
        });
    }
}
