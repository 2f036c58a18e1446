package io.retrysafe.jaxrs;

import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Base64;
import java.util.Map;

/**
 * The application's own authentication, as such a service has it: HTTP Basic for the demo users. Wrong
 * credentials are refused here, before RetrySafe; a request without any goes on anonymous, and a protected route
 * answers it {@code 401}. Every {@code 401} carries the Basic challenge.
 */
final class BasicAuthentication implements ContainerRequestFilter, ContainerResponseFilter {
    private static final String CHALLENGE = "Basic realm=\"payments\"";
    private static final Map<String, String> PASSWORDS = Map.of(PaymentsTarget.ALICE, "alice-secret",
            PaymentsTarget.BOB, "bob-secret");

    @Override
    public void filter(ContainerRequestContext request) {
        String authorization = request.getHeaderString("Authorization");
        if (authorization == null) {
            return;
        }
        String user = user(authorization);
        if (user == null) {
            request.abortWith(Response.status(401).build());
            return;
        }
        Principal principal = () -> user;
        request.setSecurityContext(new SecurityContext() {
            @Override
            public Principal getUserPrincipal() {
                return principal;
            }

            @Override
            public boolean isUserInRole(String role) {
                return false;
            }

            @Override
            public boolean isSecure() {
                return false;
            }

            @Override
            public String getAuthenticationScheme() {
                return SecurityContext.BASIC_AUTH;
            }
        });
    }

    @Override
    public void filter(ContainerRequestContext request, ContainerResponseContext response) {
        if (response.getStatus() == 401 && !response.getHeaders().containsKey("WWW-Authenticate")) {
            response.getHeaders().add("WWW-Authenticate", CHALLENGE);
        }
    }

    private static String user(String authorization) {
        if (!authorization.startsWith("Basic ")) {
            return null;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(authorization.substring(6)), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
        int colon = decoded.indexOf(':');
        if (colon < 0) {
            return null;
        }
        String user = decoded.substring(0, colon);
        return decoded.substring(colon + 1).equals(PASSWORDS.get(user)) ? user : null;
    }
}
