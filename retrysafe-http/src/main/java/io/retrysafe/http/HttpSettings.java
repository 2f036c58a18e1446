package io.retrysafe.http;

import io.retrysafe.KeyRules;
import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What an Idempotency-Key filter protects and how, whatever its HTTP stack: the routes, whose intent a
 * key is ({@code S}, the stack's scope resolver), the key rules, the bounds on the bodies held and the
 * response headers stored. Immutable; built once by a stack's builder, which extends {@link Builder}.
 * The servlet filter's {@code HttpIdempotency} and the WebFlux filter's {@code WebFluxIdempotency} are
 * built this way, so that the same settings mean the same on both stacks.
 *
 * @param <S> the stack's scope resolver
 */
public final class HttpSettings<S> {
    public static final int DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
    public static final int DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
    /** Without any route: POST and PATCH on every path, protected when they carry a key. */
    public static final List<HttpRoute> DEFAULT_ROUTES = List.of(HttpRoute.of("POST", "/**").keyRequired(false).build(),
            HttpRoute.of("PATCH", "/**").keyRequired(false).build());

    private final List<HttpRoute> routes;
    private final S scope;
    private final KeyRules keyRules;
    private final int maxRequestBytes;
    private final int maxResponseBytes;
    private final Set<String> replayedHeaders;

    private HttpSettings(Builder<S, ?> b) {
        this.routes = b.routes.isEmpty() ? DEFAULT_ROUTES : List.copyOf(b.routes);
        this.scope = b.scope;
        this.keyRules = b.keyRules == null ? KeyRules.DEFAULT : b.keyRules;
        this.maxRequestBytes = b.maxRequestBytes == null ? DEFAULT_MAX_REQUEST_BYTES : b.maxRequestBytes;
        this.maxResponseBytes = b.maxResponseBytes == null ? DEFAULT_MAX_RESPONSE_BYTES : b.maxResponseBytes;
        this.replayedHeaders = b.replayedHeaders == null ? HttpSemantics.DEFAULT_REPLAYED_HEADERS : b.replayedHeaders;
    }

    /** The protected routes, in the order they are matched. */
    public List<HttpRoute> routes() {
        return routes;
    }

    public S scope() {
        return scope;
    }

    public KeyRules keyRules() {
        return keyRules;
    }

    /** The largest request body fingerprinted; larger requests get {@code 413} and do not run. */
    public int maxRequestBytes() {
        return maxRequestBytes;
    }

    /** The largest response body held back and stored; a larger one is sent as written and stored without it. */
    public int maxResponseBytes() {
        return maxResponseBytes;
    }

    /** Lower-case names of the headers stored and replayed. */
    public Set<String> replayedHeaders() {
        return replayedHeaders;
    }

    /** The first route matching a request of this method on this normalised path; null when none does. */
    public HttpRoute route(String method, String path) {
        for (HttpRoute r : routes) {
            if (r.matches(method, path)) {
                return r;
            }
        }
        return null;
    }

    /**
     * The settings every stack's builder shares; each value may be set once. A stack's builder extends
     * it with its own scope resolver type and its own settings, and builds its configuration from
     * {@link #settings()}.
     *
     * @param <S> the stack's scope resolver
     * @param <B> the stack's builder
     */
    public abstract static class Builder<S, B extends Builder<S, B>> {
        private final List<HttpRoute> routes = new ArrayList<>();
        private final String resolverType;
        private S scope;
        private KeyRules keyRules;
        private Integer maxRequestBytes;
        private Integer maxResponseBytes;
        private Set<String> replayedHeaders;

        /**
         * @param resolverType the simple name of the stack's scope resolver, for the message of a
         *     configuration built without a scope
         */
        protected Builder(String resolverType) {
            this.resolverType = Require.notNull(resolverType, "resolverType");
        }

        @SuppressWarnings("unchecked")
        private B self() {
            return (B) this;
        }

        /**
         * A protected route; the first matching route applies. Without any, POST and PATCH on every
         * path are protected when they carry a key.
         */
        public B route(HttpRoute route) {
            routes.add(Require.notNull(route, "route"));
            return self();
        }

        /** Whose intent a request carries; required: there is no silent default to a shared scope. */
        public B scope(S scope) {
            Require.unset(this.scope, "scope");
            this.scope = Require.notNull(scope, "scope");
            return self();
        }

        public B keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return self();
        }

        /** The largest body read before the handler and fingerprinted; larger requests get {@code 413} and do not run. */
        public B maxRequestBytes(int maxRequestBytes) {
            Require.unset(this.maxRequestBytes, "maxRequestBytes");
            this.maxRequestBytes = Require.between(maxRequestBytes, 0, Integer.MAX_VALUE - 8, "maxRequestBytes");
            return self();
        }

        /**
         * The largest response body held back until its outcome is stored, and stored for replay; a larger one is
         * sent as it is written, and stored without its body.
         */
        public B maxResponseBytes(int maxResponseBytes) {
            Require.unset(this.maxResponseBytes, "maxResponseBytes");
            this.maxResponseBytes = Require.between(maxResponseBytes, 0, Integer.MAX_VALUE - 8, "maxResponseBytes");
            return self();
        }

        /** Response headers stored and replayed (case-insensitive); credentials and cookies are refused. */
        public B replayedHeaders(Set<String> names) {
            Require.unset(this.replayedHeaders, "replayedHeaders");
            this.replayedHeaders = HttpSemantics.replayedHeaders(names);
            return self();
        }

        /**
         * The shared settings, checked: a scope must have been chosen.
         *
         * @throws IllegalStateException if no scope was chosen
         */
        protected final HttpSettings<S> settings() {
            if (scope == null) {
                throw new IllegalStateException("choose whose intent a key belongs to: scope(" + resolverType
                        + ".principal()), a resolver of your own, or, only for a single trusted caller, "
                        + resolverType + ".global(name)");
            }
            return new HttpSettings<>(this);
        }
    }
}
