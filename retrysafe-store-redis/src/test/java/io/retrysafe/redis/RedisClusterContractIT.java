package io.retrysafe.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store contract on a real Redis Cluster of three masters, started by this test on loopback
 * ports ({@code redis-server} and {@code redis-cli} must be on the PATH) and stopped after it.
 */
class RedisClusterContractIT extends StandaloneStoreContract {
    @TempDir
    static Path dir;

    private static final String PREFIX = RedisTestKeys.uniquePrefix();
    /** Longer than the default: on a loaded build machine a 1 MiB write among 32 racing threads can take seconds. */
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static TestRedis.Cluster cluster;
    private static RedisClusterClient client;
    private static RedisIdempotencyStore store;

    @BeforeAll
    static void startCluster() {
        cluster = TestRedis.startCluster(dir);
        client = RedisClusterClient.create(cluster.seedUris());
        store = RedisIdempotencyStore.builder(client).keyPrefix(PREFIX).name("redis-cluster").commandTimeout(TIMEOUT)
                .build();
    }

    @AfterAll
    static void stopCluster() {
        try {
            if (store != null) {
                store.close();
            }
            if (client != null) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }

    /** Without this, the contract could pass with every record on one node; the hash spreads them over all three. */
    @Test
    void recordsAreSpreadOverEveryMaster() {
        for (int i = 0; i < 60; i++) {
            IdempotencyKey key = newKey();
            ClaimResult result = store.tryClaim(new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(),
                    LONG_LEASE, LONG_RETENTION));
            assertThat(result).as("claim of a new key").isInstanceOf(ClaimResult.Claimed.class);
        }

        Map<Integer, Integer> perNode = new LinkedHashMap<>();
        for (RedisURI node : cluster.seedUris()) {
            RedisClient nodeClient = RedisClient.create(node);
            try (StatefulRedisConnection<String, String> c = nodeClient.connect()) {
                perNode.put(node.getPort(), RedisTestKeys.keys(c.sync(), PREFIX + "{").size());
            } finally {
                nodeClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
        assertThat(perNode).as("records of this test class per master (port -> records)").hasSize(3)
                .allSatisfy((port, records) -> assertThat(records).as("records on the master at port %d", port)
                        .isPositive());
    }

    /** After SCRIPT FLUSH on every node, each node that is asked for a script gets it loaded again. */
    @Test
    void scriptFlushOnEveryMasterIsSurvived() {
        try (StatefulRedisClusterConnection<String, String> admin = client.connect()) {
            assertThat(admin.sync().scriptFlush()).isEqualTo("OK");
        }
        for (int i = 0; i < 30; i++) {
            IdempotencyKey key = newKey();
            ClaimResult result = store.tryClaim(new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(),
                    LONG_LEASE, LONG_RETENTION));
            assertThat(result).as("claim of a new key after SCRIPT FLUSH").isInstanceOf(ClaimResult.Claimed.class);
            assertThat(store.complete(key, ((ClaimResult.Claimed) result).token(), StoredResponse.of(204, new byte[0]),
                    LONG_RETENTION)).as("complete after SCRIPT FLUSH").isEqualTo(FencedWrite.COMMITTED);
        }
    }

    @Override
    protected boolean expiresRecordsItself() {
        return true;
    }
}
