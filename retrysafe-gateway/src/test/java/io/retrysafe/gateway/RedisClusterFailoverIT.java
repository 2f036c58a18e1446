package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.testservices.TestRedis;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway on a Redis Cluster of three masters, each with a replica, when a master dies (SIGKILL) and the cluster
 * promotes its replica: the gateway's own cluster client must follow, with no restart. Writes are replicated
 * asynchronously, so the test kills the master only once its replica has every record (a record the replica lacks
 * would be lost by any client, and is not what this test is about).
 */
class RedisClusterFailoverIT {
    private static final int KEYS = 30;
    /** How fast the cluster declares a silent master failed; the server's default is 15 s. */
    private static final Duration NODE_TIMEOUT = Duration.ofSeconds(2);
    /** The cluster's failover, then the gateway's client learning the new topology. */
    private static final Duration RECOVERY = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    @Test
    void afterAFailoverEveryAnswerReplaysAndNothingRunsTwice() throws Exception {
        try (TestRedis.Cluster cluster = TestRedis.startCluster(dir, 1, NODE_TIMEOUT);
                TestUpstream upstream = TestUpstream.start();
                Gateway gateway = Gateway.start(config(cluster, upstream), Map.of())) {
            GatewayHttp client = new GatewayHttp(gateway.port());
            // Keys on every master, so that some are on the one that dies.
            Map<String, String> answered = new LinkedHashMap<>();
            for (int i = 0; i < KEYS; i++) {
                String key = UUID.randomUUID().toString();
                HttpResponse<String> first = client.send(payment(client, key));
                assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
                answered.put(key, first.body());
            }
            await("every replica has every record").atMost(RECOVERY).until(cluster::replicasCaughtUp);

            int promoted = cluster.failMaster();

            // Until the gateway's client learns the new topology, the dead master's keys are refused as 503, never
            // forwarded; after it, each is replayed.
            List<Integer> statuses = new ArrayList<>();
            Map<String, String> pending = new LinkedHashMap<>(answered);
            await("every answer replayed after the failover to port " + promoted).atMost(RECOVERY)
                    .pollInterval(Duration.ofMillis(200)).until(() -> {
                        for (var it = pending.entrySet().iterator(); it.hasNext(); ) {
                            var entry = it.next();
                            HttpResponse<String> retry = client.send(payment(client, entry.getKey()));
                            statuses.add(retry.statusCode());
                            if (retry.statusCode() == 503) {
                                assertProblem(retry, 503, "/problems/store-unavailable");
                                continue;
                            }
                            assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
                            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                            assertThat(retry.body()).isEqualTo(entry.getValue());
                            it.remove();
                        }
                        return pending.isEmpty();
                    });
            assertThat(statuses).as("every retry replayed or refused, never run").containsOnly(201, 503);

            // The new topology serves new keys at once, on every master.
            for (int i = 0; i < KEYS; i++) {
                String key = UUID.randomUUID().toString();
                HttpResponse<String> first = client.send(payment(client, key));
                assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
                assertThat(upstream.calls(key)).isEqualTo(1);
            }
            for (String key : answered.keySet()) {
                assertThat(upstream.calls(key)).as("upstream calls of " + key).isEqualTo(1);
            }
        }
    }

    private static java.net.http.HttpRequest.Builder payment(GatewayHttp client, String key) {
        return client.post("/payments", null, key, "{\"amount\":1}").header("X-Tenant", "acme");
    }

    private GatewayConfig config(TestRedis.Cluster cluster, TestUpstream upstream) {
        String yaml = """
                listen:
                  port: 0
                admin:
                  port: 0
                upstream:
                  url: %s
                  response-timeout: 60s
                  connect-timeout: 10s
                scope:
                  trusted-header:
                    name: X-Tenant
                store:
                  type: redis
                  cluster-urls: [%s]
                  key-prefix: "gw-failover:"
                routes:
                  - method: POST
                    path: /payments
                """.formatted(upstream.url(), cluster.ports().stream().map(p -> "\"redis://127.0.0.1:" + p + "\"")
                .collect(Collectors.joining(", ")));
        return ConfigLoader.parse("gateway.yaml", yaml, Map.of(), dir);
    }
}
