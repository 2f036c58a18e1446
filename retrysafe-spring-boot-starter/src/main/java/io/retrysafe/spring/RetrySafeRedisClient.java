package io.retrysafe.spring;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import java.time.Duration;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The Lettuce client the store or the fast filter uses: one the starter made from a URI property
 * (and shuts down with the context), or the application's own {@code RedisClient} or
 * {@code RedisClusterClient} bean (left alone).
 */
final class RetrySafeRedisClient implements DisposableBean {
    private final RedisClient standalone;
    private final RedisClusterClient cluster;
    private final boolean owned;

    private RetrySafeRedisClient(RedisClient standalone, RedisClusterClient cluster, boolean owned) {
        this.standalone = standalone;
        this.cluster = cluster;
        this.owned = owned;
    }

    /**
     * @param uriProperty the property's name, for the error message
     * @param uri the property's value: when set, a client of the starter's own
     * @param options the options of a client the starter makes
     */
    static RetrySafeRedisClient resolve(String uriProperty, String uri, String requiredBy, ClientOptions options,
            ObjectProvider<RedisClient> clients, ObjectProvider<RedisClusterClient> clusterClients) {
        if (uri != null && !uri.isBlank()) {
            RedisURI redisUri;
            try {
                redisUri = RedisURI.create(uri.strip());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(uriProperty + " must be a Redis URI such as redis://localhost:6379, "
                        + "but was \"" + uri + "\": " + e.getMessage(), e);
            }
            RedisClient client = RedisClient.create(redisUri);
            client.setOptions(options);
            return new RetrySafeRedisClient(client, null, true);
        }
        RedisClient client = clients.getIfUnique();
        if (client != null) {
            return new RetrySafeRedisClient(client, null, false);
        }
        RedisClusterClient clusterClient = clusterClients.getIfUnique();
        if (clusterClient != null) {
            return new RetrySafeRedisClient(null, clusterClient, false);
        }
        throw new IllegalStateException(requiredBy + " needs Redis: set " + uriProperty
                + " (e.g. redis://localhost:6379), or define one Lettuce RedisClient or RedisClusterClient bean");
    }

    boolean owned() {
        return owned;
    }

    RedisFastFilter.Builder fastFilter() {
        return standalone != null ? RedisFastFilter.builder(standalone) : RedisFastFilter.builder(cluster);
    }

    RedisIdempotencyStore.Builder store() {
        return standalone != null ? RedisIdempotencyStore.builder(standalone) : RedisIdempotencyStore.builder(cluster);
    }

    @Override
    public void destroy() {
        if (owned) {
            standalone.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Override
    public String toString() {
        return "RetrySafeRedisClient[" + (standalone != null ? "standalone" : "cluster") + ", owned=" + owned + "]";
    }
}
