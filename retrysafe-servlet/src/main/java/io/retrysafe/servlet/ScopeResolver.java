package io.retrysafe.servlet;

import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import jakarta.servlet.http.HttpServletRequest;

/**
 * Names whose intent a request carries, so that one caller's key can never replay another's
 * answer. Returns {@code null} when the request has no identity; the filter then refuses it with
 * {@code 401} rather than falling back to a shared scope.
 */
@FunctionalInterface
public interface ScopeResolver {

    String resolve(HttpServletRequest request);

    /**
     * The authenticated principal's name (the default). A principal without a name (null or blank, such
     * as a token without a subject) or Spring Security's anonymous one is no caller: its keys would be everyone's.
     */
    static ScopeResolver principal() {
        return request -> HttpSemantics.principalScope(request.getUserPrincipal());
    }

    /**
     * A request header such as a tenant id. Only safe behind something that authenticates the
     * header's value: otherwise a client could name another tenant.
     */
    static ScopeResolver header(String name) {
        Require.notNull(name, "name");
        return request -> HttpSemantics.headerScope(name, request.getHeader(name));
    }

    /** The SHA-256 of a secret header (an API key), so that the secret itself is never stored. */
    static ScopeResolver hashedHeader(String name) {
        Require.notNull(name, "name");
        return request -> HttpSemantics.hashedHeaderScope(request.getHeader(name));
    }

    /**
     * One scope for every caller: keys of different clients can collide and replay each other's
     * answers. Only for services whose callers are one trusted system; must be chosen explicitly.
     */
    static ScopeResolver global(String name) {
        Require.notNull(name, "name");
        String scope = HttpSemantics.globalScope(name);
        return request -> scope;
    }
}
