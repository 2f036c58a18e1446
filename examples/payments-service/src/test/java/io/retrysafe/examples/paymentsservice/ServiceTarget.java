package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.servlet.HttpIdempotency;

/** This service as a target of the shared HTTP conformance suite, {@link HoldingFilterConfig} holding a request in flight. */
final class ServiceTarget extends PaymentsTarget {

    ServiceTarget(int port) {
        super(() -> port);
    }

    /** application.yml leaves retrysafe.http.max-request-bytes at its default. */
    @Override
    public long maxRequestBytes() {
        return HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES;
    }
}
