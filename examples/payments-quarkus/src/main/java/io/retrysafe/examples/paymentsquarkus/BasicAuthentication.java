package io.retrysafe.examples.paymentsquarkus;

import io.retrysafe.examples.paymentscommon.JaxrsBasicAuthentication;
import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.ext.Provider;

/**
 * The demo users' HTTP Basic authentication, before RetrySafe, as a provider Quarkus REST finds. The filter
 * interfaces are named here again: Quarkus REST reads them from its index, which holds this class but not the
 * library's superclass.
 */
@Provider
@Priority(Priorities.AUTHENTICATION)
public class BasicAuthentication extends JaxrsBasicAuthentication
        implements ContainerRequestFilter, ContainerResponseFilter {
}
