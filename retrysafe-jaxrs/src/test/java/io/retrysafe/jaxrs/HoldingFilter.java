package io.retrysafe.jaxrs;

import io.retrysafe.examples.paymentstesting.TestHold;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;

/**
 * Test only: holds a request marked with a {@link TestHold} right after RetrySafe's request filter, that is after
 * its key was claimed (in transactional mode inside its transaction), until the test releases it.
 */
final class HoldingFilter implements ContainerRequestFilter {

    @Override
    public void filter(ContainerRequestContext request) {
        TestHold.holdIfMarked(request.getHeaderString(TestHold.HEADER));
    }
}
