package io.retrysafe.webflux;

import io.retrysafe.KeyRules;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What the WebFlux filter protects and how: the servlet filter's settings, with the scope read from
 * the exchange. Immutable; built once.
 *
 * <pre>{@code
 * WebFluxIdempotency config = WebFluxIdempotency.custom()
 *         .route(HttpRoute.of("POST", "/payments").build())
 *         .scope(ReactiveScopeResolver.principal())
 *         .build();
 * }</pre>
 */
public final class WebFluxIdempotency {
    public static final int DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
    public static final int DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

    private final List<HttpRoute> routes;
    private final ReactiveScopeResolver scope;
    private final KeyRules keyRules;
    private final int maxRequestBytes;
    private final int maxResponseBytes;
    private final Set<String> replayedHeaders;

    private WebFluxIdempotency(Builder b) {
        this.routes = b.routes.isEmpty()
                ? List.of(HttpRoute.of("POST", "/**").keyRequired(false).build(),
                        HttpRoute.of("PATCH", "/**").keyRequired(false).build())
                : List.copyOf(b.routes);
        this.scope = b.scope;
        this.keyRules = b.keyRules == null ? KeyRules.DEFAULT : b.keyRules;
        this.maxRequestBytes = b.maxRequestBytes == null ? DEFAULT_MAX_REQUEST_BYTES : b.maxRequestBytes;
        this.maxResponseBytes = b.maxResponseBytes == null ? DEFAULT_MAX_RESPONSE_BYTES : b.maxResponseBytes;
        this.replayedHeaders = b.replayedHeaders == null ? HttpSemantics.DEFAULT_REPLAYED_HEADERS : b.replayedHeaders;
    }

    public static Builder custom() {
        return new Builder();
    }

    public List<HttpRoute> routes() {
        return routes;
    }

    public ReactiveScopeResolver scope() {
        return scope;
    }

    public KeyRules keyRules() {
        return keyRules;
    }

    public int maxRequestBytes() {
        return maxRequestBytes;
    }

    public int maxResponseBytes() {
        return maxResponseBytes;
    }

    /** Lower-case names of the headers stored and replayed. */
    public Set<String> replayedHeaders() {
        return replayedHeaders;
    }

    /** The first route matching, in the order configured; null when none does. */
    HttpRoute route(String method, String path) {
        for (HttpRoute r : routes) {
            if (r.matches(method, path)) {
                return r;
            }
        }
        return null;
    }

    public static final class Builder {
        private final List<HttpRoute> routes = new ArrayList<>();
        private ReactiveScopeResolver scope;
        private KeyRules keyRules;
        private Integer maxRequestBytes;
        private Integer maxResponseBytes;
        private Set<String> replayedHeaders;

        private Builder() {
        }

        /** A protected route; the first matching applies. Without any, POST and PATCH on every path carrying a key. */
        public Builder route(HttpRoute route) {
            routes.add(Require.notNull(route, "route"));
            return this;
        }

        /** Whose intent a request carries; required: there is no silent default to a shared scope. */
        public Builder scope(ReactiveScopeResolver scope) {
            Require.unset(this.scope, "scope");
            this.scope = Require.notNull(scope, "scope");
            return this;
        }

        public Builder keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return this;
        }

        /** The largest body read before the handler and fingerprinted; larger requests get {@code 413} and do not run. */
        public Builder maxRequestBytes(int maxRequestBytes) {
            Require.unset(this.maxRequestBytes, "maxRequestBytes");
            this.maxRequestBytes = Require.between(maxRequestBytes, 0, Integer.MAX_VALUE - 8, "maxRequestBytes");
            return this;
        }

        /** The largest response body held back for storage; see the filter for what happens above it. */
        public Builder maxResponseBytes(int maxResponseBytes) {
            Require.unset(this.maxResponseBytes, "maxResponseBytes");
            this.maxResponseBytes = Require.between(maxResponseBytes, 0, Integer.MAX_VALUE - 8, "maxResponseBytes");
            return this;
        }

        /** Response headers stored and replayed (case-insensitive); credentials and cookies are refused. */
        public Builder replayedHeaders(Set<String> names) {
            Require.unset(this.replayedHeaders, "replayedHeaders");
            this.replayedHeaders = HttpSemantics.replayedHeaders(names);
            return this;
        }

        public WebFluxIdempotency build() {
            if (scope == null) {
                throw new IllegalStateException("choose whose intent a key belongs to: "
                        + "scope(ReactiveScopeResolver.principal()), a resolver of your own, or, only for a single "
                        + "trusted caller, ReactiveScopeResolver.global(name)");
            }
            return new WebFluxIdempotency(this);
        }
    }
}
