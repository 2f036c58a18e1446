package io.retrysafe.servlet;

import io.retrysafe.OperationPolicy;
import io.retrysafe.http.HttpRoute;
import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.Optional;

/**
 * A method and path pattern the filter protects, with its own rules: an {@link HttpRoute} (where the
 * patterns and their matching are described), matched against servlet requests.
 *
 * <pre>{@code
 * IdempotentRoute.of("POST", "/payments").keyRequired(true).jsonMembers("/amount", "/account").build()
 * }</pre>
 */
public final class IdempotentRoute {
    private final HttpRoute route;

    private IdempotentRoute(HttpRoute route) {
        this.route = route;
    }

    public static Builder of(String method, String pattern) {
        return new Builder(HttpRoute.of(method, pattern));
    }

    /** The servlet route of a stack-neutral one. */
    static IdempotentRoute of(HttpRoute route) {
        return new IdempotentRoute(route);
    }

    /** The stack-neutral route this one is. */
    public HttpRoute route() {
        return route;
    }

    public String method() {
        return route.method();
    }

    public String pattern() {
        return route.pattern();
    }

    /** Whether a request without a key is refused ({@code 400}) or passes through unprotected. */
    public boolean keyRequired() {
        return route.keyRequired();
    }

    /** The route's own policy, or empty for the engine's. */
    public Optional<OperationPolicy> policy() {
        return route.policy();
    }

    /** JSON Pointers of the members the fingerprint covers; empty for the whole body. */
    public List<String> jsonMembers() {
        return route.jsonMembers();
    }

    /**
     * Lower-case names of the request headers the fingerprint covers besides the request line, content type and
     * body (an account header, a currency); empty for none.
     */
    public List<String> fingerprintHeaders() {
        return route.fingerprintHeaders();
    }

    /** Whether this route protects the request: its method, and its path normalised as the filter matches it. */
    public boolean matches(HttpServletRequest request) {
        return matches(request.getMethod(), RequestPath.of(request));
    }

    boolean matches(String requestMethod, String path) {
        return route.matches(requestMethod, path);
    }

    @Override
    public String toString() {
        return route.toString();
    }

    public static final class Builder {
        private final HttpRoute.Builder route;

        private Builder(HttpRoute.Builder route) {
            this.route = route;
        }

        public Builder keyRequired(boolean keyRequired) {
            route.keyRequired(keyRequired);
            return this;
        }

        public Builder policy(OperationPolicy policy) {
            route.policy(policy);
            return this;
        }

        /** Fingerprint only these JSON members (RFC 6901 pointers), so that clients may vary the rest. */
        public Builder jsonMembers(String... pointers) {
            route.jsonMembers(pointers);
            return this;
        }

        /**
         * Fingerprint these request headers too: a retry with another value under the same key is refused
         * {@code 422}. Their values count as sent (several field lines in order); an absent header counts too.
         */
        public Builder fingerprintHeaders(String... names) {
            route.fingerprintHeaders(names);
            return this;
        }

        public IdempotentRoute build() {
            return new IdempotentRoute(route.build());
        }
    }
}
