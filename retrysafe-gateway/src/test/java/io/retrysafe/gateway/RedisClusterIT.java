package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.testservices.TestRedis;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

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

    /**
     * A gateway that has just started has its connections to the cluster open (its topology learnt, the scripts
     * loaded): its first requests do not wait for them, and so are not refused for want of a store.
     */
    @Test
    void aFreshGatewayIsConnectedToEveryMasterBeforeItsFirstRequest() throws Exception {
        List<StatefulRedisConnection<String, String>> nodes = new ArrayList<>();
        List<RedisClient> clients = new ArrayList<>();
        try {
            for (int port : cluster.ports()) {
                RedisClient c = RedisClient.create("redis://127.0.0.1:" + port);
                clients.add(c);
                nodes.add(c.connect());
            }
            List<Long> before = nodes.stream().map(RedisClusterIT::clients).toList();
            try (Gateway fresh = Gateway.start(config(), env())) {
                List<Long> after = nodes.stream().map(RedisClusterIT::clients).toList();
                for (int i = 0; i < nodes.size(); i++) {
                    assertThat(after.get(i)).as("connections to master %d", i).isGreaterThan(before.get(i));
                }
            }
        } finally {
            nodes.forEach(StatefulRedisConnection::close);
            clients.forEach(RedisClient::shutdown);
        }
    }

    private static long clients(StatefulRedisConnection<String, String> node) {
        return node.sync().clientList().lines().filter(l -> !l.isBlank()).count();
    }

    @Override
    void cleanUp() {
        if (cluster != null) {
            cluster.close();
        }
    }
}
