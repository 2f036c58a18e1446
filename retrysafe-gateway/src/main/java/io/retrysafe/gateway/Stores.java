package io.retrysafe.gateway;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.dynamodb.DynamoDbIdempotencyStore;
import io.retrysafe.gateway.GatewayConfig.Store;
import io.retrysafe.gateway.GatewayConfig.StoreType;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;

/** The store the configuration names, with what it holds open (a pool, a Redis or DynamoDB client), closed with it. */
final class Stores {
    /** How long the gateway's start waits for Redis: past it, it starts and connects on first use. */
    static final Duration STARTUP_WAIT = Duration.ofSeconds(10);
    private static final System.Logger LOG = System.getLogger(Stores.class.getName());
    /** What {@code /health} asks the store for: any key's record, to know the store answers. */
    private static final IdempotencyKey PROBE = IdempotencyKey.of("retrysafe-gateway", "health-probe");
    /** Bound on each DynamoDB call (the SDK's synchronous client has none): past it, the request gets 503. */
    private static final Duration DYNAMODB_CALL_TIMEOUT = Duration.ofSeconds(2);

    private Stores() {
    }

    record Opened(IdempotencyStore store, AutoCloseable resources) {
        /** The store's non-blocking view: Redis's own, or a blocking store's calls run on {@code threads}. */
        AsyncIdempotencyStore async(Executor threads) {
            return store instanceof RedisIdempotencyStore redis ? redis.async() : new StoreOnThreads(store, threads);
        }

        /** Whether the store answers; a read of one record, never a write. */
        boolean isReachable() {
            try {
                store.inspect(PROBE);
                return true;
            } catch (RuntimeException e) {
                return false;
            }
        }
    }

    static Opened open(Store config, Map<String, String> env) {
        if (config.type() == StoreType.REDIS) {
            return redis(config);
        }
        if (config.type() == StoreType.DYNAMODB) {
            return dynamodb(config);
        }
        HikariConfig pool = new HikariConfig();
        pool.setPoolName("retrysafe-gateway");
        pool.setJdbcUrl(config.url().orElseThrow());
        config.username().ifPresent(pool::setUsername);
        if (config.passwordEnv().isPresent()) {
            String password = env.get(config.passwordEnv().get());
            if (password == null) {
                throw new ConfigException("environment", 0, 0, "store.password-env names "
                        + config.passwordEnv().get() + ", which is not set");
            }
            pool.setPassword(password);
        }
        pool.setMaximumPoolSize(config.poolSize());
        // Start even when the database is down: /health says so, and requests get 503 until it is back.
        pool.setInitializationFailTimeout(-1);
        pool.setConnectionTimeout(5_000);
        HikariDataSource dataSource = new HikariDataSource(pool);
        JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(dataSource);
        config.table().ifPresent(builder::table);
        JdbcIdempotencyStore store;
        try {
            store = builder.build();
            if (config.createSchema()) {
                store.createSchema();
            }
        } catch (RuntimeException e) {
            dataSource.close();
            throw e;
        }
        return new Opened(store, dataSource);
    }

    private static Opened dynamodb(Store config) {
        DynamoDbClientBuilder builder = DynamoDbClient.builder().httpClient(UrlConnectionHttpClient.create())
                .overrideConfiguration(c -> c.apiCallTimeout(DYNAMODB_CALL_TIMEOUT));
        config.url().ifPresent(u -> builder.endpointOverride(URI.create(u)));
        DynamoDbClient client = builder.build();
        try {
            DynamoDbIdempotencyStore.Builder store = DynamoDbIdempotencyStore.builder(client);
            config.table().ifPresent(store::tableName);
            DynamoDbIdempotencyStore built = store.build();
            if (config.createSchema()) {
                built.createTableIfAbsent();
            }
            Opened opened = new Opened(built, client);
            // The client's first call loads most of the SDK; made now, it does not cost the first request its bound.
            if (!opened.isReachable()) {
                LOG.log(Level.WARNING, () -> "DynamoDB did not answer at start; /health is DOWN and requests get 503 "
                        + "until it does");
            }
            return opened;
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    private static Opened redis(Store config) {
        RedisIdempotencyStore.Builder builder;
        AutoCloseable client;
        if (config.clusterUrls().isEmpty()) {
            RedisClient redis = RedisClient.create(RedisURI.create(config.url().orElseThrow()));
            builder = RedisIdempotencyStore.builder(redis);
            client = redis::shutdown;
        } else {
            List<RedisURI> seeds = new ArrayList<>();
            config.clusterUrls().forEach(u -> seeds.add(RedisURI.create(u)));
            RedisClusterClient cluster = RedisClusterClient.create(seeds);
            builder = RedisIdempotencyStore.builder(cluster);
            client = cluster::shutdown;
        }
        config.keyPrefix().ifPresent(builder::keyPrefix);
        if (config.waitForReplicas() > 0) {
            builder.waitForReplicas(config.waitForReplicas(), config.replicaTimeout());
        }
        RedisIdempotencyStore store = builder.build();
        // Connected (a cluster's topology learnt, the scripts loaded on every node) before the first request.
        if (!store.connect(STARTUP_WAIT)) {
            LOG.log(Level.WARNING, () -> "not connected to Redis within " + STARTUP_WAIT + "; /health is DOWN and "
                    + "requests are answered 503 store-unavailable until it answers");
        }
        return new Opened(store, () -> {
            try (client) {
                store.close();
            }
        });
    }
}
