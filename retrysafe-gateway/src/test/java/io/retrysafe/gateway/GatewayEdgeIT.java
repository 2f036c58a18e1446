package io.retrysafe.gateway;

import java.util.Map;

/** The edge on PostgreSQL: protected requests take the servlet filter, on a request thread. */
class GatewayEdgeIT extends EdgeContract {
    @Override
    String store() {
        return TestStores.postgres(TestStores.table());
    }

    @Override
    Map<String, String> env() {
        return TestStores.postgresEnv();
    }
}
