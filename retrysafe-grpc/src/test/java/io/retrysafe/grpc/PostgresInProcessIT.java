package io.retrysafe.grpc;

/** PostgreSQL through the JDBC store, in process. */
class PostgresInProcessIT extends ServerInterceptorContract {
    PostgresInProcessIT() {
        super(TestServer.Transport.IN_PROCESS, PostgresContract::engine);
    }
}
