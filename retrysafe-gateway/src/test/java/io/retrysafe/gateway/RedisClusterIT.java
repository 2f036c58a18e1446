package io.retrysafe.gateway;

import io.retrysafe.testservices.TestRedis;
import java.util.stream.Collectors;

/**
 * A Redis Cluster of three masters the test starts ({@code store.cluster-urls}, every master a seed): keys of
 * one request land on whichever master owns their slot; callers named by HTTP Basic.
 */
class RedisClusterIT extends BasicScopeContract {
    private TestRedis.Cluster cluster;

    @Override
    void prepare() throws Exception {
        super.prepare();
        cluster = TestRedis.startCluster(dir);
    }

    @Override
    String store() {
        return """
                type: redis
                cluster-urls: [%s]
                key-prefix: "gw-it:"
                """.formatted(cluster.ports().stream().map(p -> "\"redis://127.0.0.1:" + p + "\"")
                .collect(Collectors.joining(", ")));
    }

    @Override
    void cleanUp() {
        if (cluster != null) {
            cluster.close();
        }
    }
}
