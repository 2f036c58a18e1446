package io.retrysafe.examples.gateway;

/** The suite with the gateway's keys in MariaDB. */
class GatewayMariaDbConformanceIT extends GatewayConformance {
    @Override
    Gateway.Store store() {
        return Gateway.Store.MARIADB;
    }
}
