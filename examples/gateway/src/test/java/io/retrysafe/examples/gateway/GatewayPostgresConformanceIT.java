package io.retrysafe.examples.gateway;

/** The suite with the gateway's keys in PostgreSQL, the example's own store. */
class GatewayPostgresConformanceIT extends GatewayConformance {
    @Override
    Gateway.Store store() {
        return Gateway.Store.POSTGRESQL;
    }
}
