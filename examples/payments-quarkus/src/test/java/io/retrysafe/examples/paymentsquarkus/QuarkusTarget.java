package io.retrysafe.examples.paymentsquarkus;

import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import org.eclipse.microprofile.config.ConfigProvider;

/** The service a {@code @QuarkusTest} started, on the port Quarkus chose. */
final class QuarkusTarget extends PaymentsTarget {
    /** As {@code %test.retrysafe.http.max-request-bytes} says. */
    static final int MAX_REQUEST_BYTES = 4096;

    QuarkusTarget() {
        super(() -> ConfigProvider.getConfig().getValue("quarkus.http.test-port", Integer.class));
    }

    @Override
    public long maxRequestBytes() {
        return MAX_REQUEST_BYTES;
    }
}
