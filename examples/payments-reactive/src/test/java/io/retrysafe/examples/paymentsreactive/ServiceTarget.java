package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.conformance.RestartableTarget;
import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.webflux.WebFluxIdempotency;
import java.util.function.IntSupplier;

/**
 * This service as a target of the shared HTTP conformance suite, {@link HoldingWebFilter} holding a
 * request in flight. A service the test runs as a child JVM can be restarted, on another port.
 */
final class ServiceTarget extends PaymentsTarget implements RestartableTarget {

    /** Restarts the service; the port supplier then says where it listens. */
    @FunctionalInterface
    interface Restart {
        void restart() throws Exception;
    }

    private final Restart restart;

    /** The service in the test's own JVM, which cannot be restarted. */
    ServiceTarget(IntSupplier port) {
        this(port, () -> {
            throw new UnsupportedOperationException("the service runs in the test's JVM; it cannot be restarted");
        });
    }

    ServiceTarget(IntSupplier port, Restart restart) {
        super(port);
        this.restart = restart;
    }

    @Override
    public void restart() throws Exception {
        restart.restart();
    }

    /** application.yml leaves retrysafe.http.max-request-bytes at its default. */
    @Override
    public long maxRequestBytes() {
        return WebFluxIdempotency.DEFAULT_MAX_REQUEST_BYTES;
    }
}
