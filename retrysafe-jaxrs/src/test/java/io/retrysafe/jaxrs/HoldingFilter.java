package io.retrysafe.jaxrs;

import io.retrysafe.examples.paymentstesting.TestHold;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Test only: holds a request marked with a {@link TestHold} right after RetrySafe's request filter, that is after
 * its key was claimed (in transactional mode inside its transaction), until the test releases it.
 */
final class HoldingFilter implements ContainerRequestFilter {

    @Override
    public void filter(ContainerRequestContext request) {
        TestHold hold = TestHold.take(request.getHeaderString(TestHold.HEADER));
        if (hold == null) {
            return;
        }
        hold.arrive();
        try {
            hold.released().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("test hold was not released within 60 s", e);
        }
    }
}
