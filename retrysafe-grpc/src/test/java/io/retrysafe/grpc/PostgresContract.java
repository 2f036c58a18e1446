package io.retrysafe.grpc;

import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.testservices.TestDatabases;

/** The JDBC store on PostgreSQL, one table of the gRPC tests' own. */
final class PostgresContract {
    private PostgresContract() {
    }

    static RetrySafe engine() {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table("rs_grpc_it").build();
        store.createSchema();
        return RetrySafe.builder(store).name("grpc-it").build();
    }
}
