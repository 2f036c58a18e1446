package io.retrysafe.grpc;

/** PostgreSQL through the JDBC store, over Netty on a loopback port. */
class PostgresNettyIT extends ServerInterceptorContract {
    PostgresNettyIT() {
        super(TestServer.Transport.NETTY, PostgresContract::engine);
    }
}
