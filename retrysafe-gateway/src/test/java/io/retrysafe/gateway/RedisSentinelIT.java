package io.retrysafe.gateway;

import io.retrysafe.testservices.TestRedis;

/**
 * A private Redis found through a Sentinel the test starts ({@code store.url: redis-sentinel://…#master}): the
 * gateway asks the Sentinel for the master, then talks to the master; callers named by HTTP Basic.
 */
class RedisSentinelIT extends BasicScopeContract {
    private TestRedis.Server master;
    private TestRedis.Sentinel sentinel;

    @Override
    void prepare() throws Exception {
        super.prepare();
        master = TestRedis.startServer(dir);
        sentinel = TestRedis.startSentinel(dir, master, "payments");
    }

    @Override
    String store() {
        return """
                type: redis
                url: "redis-sentinel://127.0.0.1:%d#%s"
                key-prefix: "gw-it:"
                """.formatted(sentinel.port(), sentinel.masterName());
    }

    @Override
    void cleanUp() {
        try (TestRedis.Server m = master; TestRedis.Sentinel s = sentinel) {
            // both stopped, the Sentinel first
        }
    }
}
