package io.retrysafe.jaxrs;

import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import jakarta.ws.rs.container.ContainerRequestContext;

/**
 * Names whose intent a request carries, so that one caller's key can never replay another's answer: the servlet
 * filter's scopes, read from a Jakarta REST request. Returns {@code null} when the request has no identity; the
 * filter then refuses it with {@code 401} rather than falling back to a shared scope.
 */
@FunctionalInterface
public interface JaxrsScopeResolver {

    String resolve(ContainerRequestContext request);

    /**
     * The authenticated principal's name: the request's {@code SecurityContext}, as the application's
     * authentication filter or the container set it. A principal without a name is no caller.
     */
    static JaxrsScopeResolver principal() {
        return request -> request.getSecurityContext() == null ? null
                : HttpSemantics.principalScope(request.getSecurityContext().getUserPrincipal());
    }

    /** A request header such as a tenant id; only safe behind something that authenticates the header's value. */
    static JaxrsScopeResolver header(String name) {
        Require.notNull(name, "name");
        return request -> HttpSemantics.headerScope(name, request.getHeaderString(name));
    }

    /** The SHA-256 of a secret header (an API key), so that the secret itself is never stored. */
    static JaxrsScopeResolver hashedHeader(String name) {
        Require.notNull(name, "name");
        return request -> HttpSemantics.hashedHeaderScope(request.getHeaderString(name));
    }

    /** One scope for every caller; only for services whose callers are one trusted system. */
    static JaxrsScopeResolver global(String name) {
        Require.notNull(name, "name");
        String scope = HttpSemantics.globalScope(name);
        return request -> scope;
    }
}
