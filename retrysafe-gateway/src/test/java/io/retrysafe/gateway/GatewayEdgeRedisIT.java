package io.retrysafe.gateway;

import java.util.Map;
import java.util.UUID;

/** The edge on Redis, under a key prefix of this run's own: protected requests take the non-blocking path. */
class GatewayEdgeRedisIT extends EdgeContract {
    @Override
    String store() {
        return TestStores.redis("gw-edge-" + UUID.randomUUID() + ":");
    }

    @Override
    Map<String, String> env() {
        return Map.of();
    }
}
