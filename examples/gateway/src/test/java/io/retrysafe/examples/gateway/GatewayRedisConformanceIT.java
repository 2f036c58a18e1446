package io.retrysafe.examples.gateway;

/** The suite with the gateway's keys in the shared standalone Redis, under a key prefix of its own. */
class GatewayRedisConformanceIT extends GatewayConformance {
    @Override
    Gateway.Store store() {
        return Gateway.Store.REDIS;
    }
}
