package io.retrysafe.grpc;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The in-memory store, in process. */
class RetrySafeServerInterceptorTest extends ServerInterceptorContract {
    private static TestServer server;

    @BeforeAll
    static void start() throws Exception {
        server = TestServer.start(TestServer.Transport.IN_PROCESS,
                RetrySafe.builder(new InMemoryIdempotencyStore()).name("grpc-test").build());
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    @Override
    TestServer server() {
        return server;
    }
}
