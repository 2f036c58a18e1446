package io.retrysafe.examples.paymentsquarkus;

import io.retrysafe.examples.paymentstesting.TestHold;
import io.retrysafe.jaxrs.RetrySafeFeature;
import jakarta.annotation.Priority;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.ext.Provider;

/**
 * Test only: holds a request marked with a {@link TestHold} right after RetrySafe's request filter, that is after
 * its key was claimed (in transactional mode inside its transaction), until the test releases it.
 */
@Provider
@Priority(RetrySafeFeature.PRIORITY + 1)
public class HoldingFilter implements ContainerRequestFilter {

    @Override
    public void filter(ContainerRequestContext request) {
        TestHold.holdIfMarked(request.getHeaderString(TestHold.HEADER));
    }
}
