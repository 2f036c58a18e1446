package io.retrysafe.gateway;

import java.net.http.HttpRequest;
import java.util.List;
import java.util.Map;

/** MariaDB, the schema created at start; the caller named by a header a trusted proxy sets. */
class MariaDbTrustedHeaderIT extends GatewayContract {

    @Override
    String store() {
        return TestStores.mariadb(TestStores.table());
    }

    @Override
    Map<String, String> env() {
        return TestStores.mariadbEnv();
    }

    @Override
    String scope() {
        return "trusted-header:\n  name: X-Tenant\n";
    }

    @Override
    List<String> challenge() {
        return List.of();
    }

    @Override
    HttpRequest.Builder as(String name, HttpRequest.Builder request) {
        return request.header("X-Tenant", name);
    }

    @Override
    HttpRequest.Builder asNobody(HttpRequest.Builder request) {
        return request.header("X-Tenant", " ");
    }
}
