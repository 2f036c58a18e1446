package io.retrysafe.gateway;

import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import java.util.Map;

/** The gateway's protected routes on PostgreSQL: every request takes the servlet filter, on a request thread. */
class GatewayPostgresIT extends ProtectedRouteContract {
    private static final String TABLE = TestStores.table();

    @Override
    String store() {
        return TestStores.postgres(TABLE);
    }

    @Override
    Map<String, String> env() {
        return TestStores.postgresEnv();
    }

    @Override
    IdempotencyStore records() {
        return JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(TABLE).build();
    }
}
