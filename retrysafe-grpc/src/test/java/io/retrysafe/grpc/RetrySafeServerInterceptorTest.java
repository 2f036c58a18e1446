package io.retrysafe.grpc;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;

/** The in-memory store, in process. */
class RetrySafeServerInterceptorTest extends ServerInterceptorContract {
    RetrySafeServerInterceptorTest() {
        super(TestServer.Transport.IN_PROCESS,
                () -> RetrySafe.builder(new InMemoryIdempotencyStore()).name("grpc-test").build());
    }
}
