package io.retrysafe.gateway;

import io.retrysafe.testservices.TestRedis;
import java.time.Duration;

/**
 * A private Redis master with a replica, found through a Sentinel the test starts
 * ({@code store.url: redis-sentinel://…#master}): the gateway asks the Sentinel for the master, then talks to the
 * master, and waits for the replica to acknowledge each claim and completion ({@code store.wait-for-replicas});
 * callers named by HTTP Basic.
 */
class RedisSentinelIT extends BasicScopeContract {
    private TestRedis.Replicated redis;

    @Override
    void prepare() throws Exception {
        super.prepare();
        redis = TestRedis.startReplicated(dir, 1, 1, "payments", Duration.ofSeconds(5));
    }

    @Override
    String store() {
        return """
                type: redis
                url: "%s"
                key-prefix: "gw-it:"
                wait-for-replicas: 1
                """.formatted(redis.uriString());
    }

    @Override
    void cleanUp() {
        redis.close();
    }
}
