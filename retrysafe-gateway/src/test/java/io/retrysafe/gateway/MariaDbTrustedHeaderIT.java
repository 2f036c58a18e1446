package io.retrysafe.gateway;

import io.retrysafe.testservices.TestDatabases;
import java.net.http.HttpRequest;
import java.util.Map;
import java.util.UUID;

/** MariaDB, the schema created at start; the caller named by a header a trusted proxy sets. */
class MariaDbTrustedHeaderIT extends GatewayContract {
    private static final String TABLE = "gw_it_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

    @Override
    String store() {
        return """
                type: mariadb
                url: %s
                username: %s
                password-env: TEST_MARIADB_PASSWORD
                pool-size: 4
                table: %s
                create-schema: true
                """.formatted(TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(), TABLE);
    }

    @Override
    Map<String, String> env() {
        return Map.of("TEST_MARIADB_PASSWORD", TestDatabases.mariadbPassword());
    }

    @Override
    String scope() {
        return "trusted-header:\n  name: X-Tenant\n";
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
