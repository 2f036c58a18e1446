package io.retrysafe.webflux;

import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Names whose intent a request carries, so that one caller's key can never replay another's answer:
 * the servlet filter's scopes, read from an exchange. Empty when the request has no identity; the
 * filter then refuses it with {@code 401} rather than falling back to a shared scope.
 */
@FunctionalInterface
public interface ReactiveScopeResolver {

    Mono<String> resolve(ServerWebExchange exchange);

    /**
     * The authenticated principal's name (the default): {@link ServerWebExchange#getPrincipal()}, which
     * Spring Security fills from the reactive security context. A principal without a name, or Spring
     * Security's anonymous one (which the exchange carries when anonymous access is on), is no caller.
     */
    static ReactiveScopeResolver principal() {
        return exchange -> exchange.getPrincipal().mapNotNull(HttpSemantics::principalScope);
    }

    /** A request header such as a tenant id; only safe behind something that authenticates the header's value. */
    static ReactiveScopeResolver header(String name) {
        Require.notNull(name, "name");
        return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst(name))
                .mapNotNull(v -> HttpSemantics.headerScope(name, v));
    }

    /** The SHA-256 of a secret header (an API key), so that the secret itself is never stored. */
    static ReactiveScopeResolver hashedHeader(String name) {
        Require.notNull(name, "name");
        return exchange -> Mono.justOrEmpty(exchange.getRequest().getHeaders().getFirst(name))
                .mapNotNull(HttpSemantics::hashedHeaderScope);
    }

    /** One scope for every caller; only for services whose callers are one trusted system. */
    static ReactiveScopeResolver global(String name) {
        Require.notNull(name, "name");
        Mono<String> scope = Mono.just(HttpSemantics.globalScope(name));
        return exchange -> scope;
    }
}
