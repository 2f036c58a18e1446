package io.retrysafe.examples.paymentscommon;

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
 * The Jakarta REST payments services' security, as such a service has it: HTTP Basic for the demo users,
 * alice:alice-secret and bob:bob-secret, registered at {@code Priorities.AUTHENTICATION}, before RetrySafe (whose
 * scope is the principal). Wrong credentials are refused here; a request without any goes on anonymous, and a
 * protected route answers it 401. Every 401 carries the Basic challenge.
 */
public class JaxrsBasicAuthentication implements ContainerRequestFilter, ContainerResponseFilter {
    private static final Map<String, String> PASSWORDS = Map.of("alice", "alice-secret", "bob", "bob-secret");

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
        request.setSecurityContext(new Authenticated(() -> user));
    }

    @Override
    public void filter(ContainerRequestContext request, ContainerResponseContext response) {
        if (response.getStatus() == 401 && !response.getHeaders().containsKey("WWW-Authenticate")) {
            response.getHeaders().add("WWW-Authenticate", "Basic realm=\"payments\"");
        }
    }

    private static String user(String authorization) {
        if (!authorization.startsWith("Basic ")) {
            return null;
        }
        try {
            String decoded = new String(Base64.getDecoder().decode(authorization.substring(6)), StandardCharsets.UTF_8);
            int colon = decoded.indexOf(':');
            String user = colon < 0 ? null : decoded.substring(0, colon);
            return user != null && decoded.substring(colon + 1).equals(PASSWORDS.get(user)) ? user : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private record Authenticated(Principal getUserPrincipal) implements SecurityContext {
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
            return BASIC_AUTH;
        }
    }
}
