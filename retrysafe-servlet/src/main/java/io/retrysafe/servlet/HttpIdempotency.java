package io.retrysafe.servlet;

import io.retrysafe.KeyRules;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What the filter protects and how. Immutable; built once.
 *
 * <pre>{@code
 * HttpIdempotency config = HttpIdempotency.custom()
 *         .route(IdempotentRoute.of("POST", "/payments").build())
 *         .scope(ScopeResolver.principal())
 *         .build();
 * }</pre>
 */
public final class HttpIdempotency {
    public static final int DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
    public static final int DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
    /** Headers replayed with a stored response unless configured otherwise. */
    public static final Set<String> DEFAULT_REPLAYED_HEADERS = HttpSemantics.DEFAULT_REPLAYED_HEADERS;
    /** Never stored, whatever is configured: they carry credentials or per-session state. */
    public static final Set<String> FORBIDDEN_HEADERS = HttpSemantics.FORBIDDEN_HEADERS;
    public static final String HEADER = HttpSemantics.KEY_HEADER;
    /** A handler's {@code sendError} message is not shown (nor stored) unless the application shows such messages. */
    public static final boolean DEFAULT_INCLUDE_ERROR_MESSAGES = false;

    private final List<IdempotentRoute> routes;
    private final ScopeResolver scope;
    private final KeyRules keyRules;
    private final int maxRequestBytes;
    private final int maxResponseBytes;
    private final Set<String> replayedHeaders;
    private final boolean includeErrorMessages;

    private HttpIdempotency(Builder b) {
        this.routes = b.routes.isEmpty()
                ? List.of(IdempotentRoute.of("POST", "/**").keyRequired(false).build(),
                        IdempotentRoute.of("PATCH", "/**").keyRequired(false).build())
                : List.copyOf(b.routes);
        this.scope = b.scope;
        this.keyRules = b.keyRules == null ? KeyRules.DEFAULT : b.keyRules;
        this.maxRequestBytes = b.maxRequestBytes == null ? DEFAULT_MAX_REQUEST_BYTES : b.maxRequestBytes;
        this.maxResponseBytes = b.maxResponseBytes == null ? DEFAULT_MAX_RESPONSE_BYTES : b.maxResponseBytes;
        this.replayedHeaders = b.replayedHeaders == null ? DEFAULT_REPLAYED_HEADERS : b.replayedHeaders;
        this.includeErrorMessages = b.includeErrorMessages == null ? DEFAULT_INCLUDE_ERROR_MESSAGES
                : b.includeErrorMessages;
    }

    public static Builder custom() {
        return new Builder();
    }

    public List<IdempotentRoute> routes() {
        return routes;
    }

    public ScopeResolver scope() {
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

    /** Whether the message of a handler's {@code sendError(status, message)} is in the problem the client gets. */
    public boolean includeErrorMessages() {
        return includeErrorMessages;
    }

    /** The first route matching, in the order configured; null when none does. */
    IdempotentRoute route(String method, String path) {
        for (IdempotentRoute r : routes) {
            if (r.matches(method, path)) {
                return r;
            }
        }
        return null;
    }

    public static final class Builder {
        private final List<IdempotentRoute> routes = new ArrayList<>();
        private ScopeResolver scope;
        private KeyRules keyRules;
        private Integer maxRequestBytes;
        private Integer maxResponseBytes;
        private Set<String> replayedHeaders;
        private Boolean includeErrorMessages;

        private Builder() {
        }

        /**
         * A protected route; the first matching route applies. Without any, POST and PATCH on every
         * path are protected when they carry a key.
         */
        public Builder route(IdempotentRoute route) {
            routes.add(Require.notNull(route, "route"));
            return this;
        }

        /** Whose intent a request carries; required: there is no silent default to a shared scope. */
        public Builder scope(ScopeResolver scope) {
            Require.unset(this.scope, "scope");
            this.scope = Require.notNull(scope, "scope");
            return this;
        }

        public Builder keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return this;
        }

        /** The largest body fingerprinted; larger requests get {@code 413} and do not run. */
        public Builder maxRequestBytes(int maxRequestBytes) {
            Require.unset(this.maxRequestBytes, "maxRequestBytes");
            this.maxRequestBytes = Require.between(maxRequestBytes, 0, Integer.MAX_VALUE - 8, "maxRequestBytes");
            return this;
        }

        /** The largest response body stored for replay; see the filter for what happens above it. */
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

        /**
         * Whether a handler's {@code sendError(status, message)} message reaches the client (and is stored
         * for replays) as the problem's {@code detail}; off by default, as Spring Boot's
         * {@code server.error.include-message} is.
         */
        public Builder includeErrorMessages(boolean includeErrorMessages) {
            Require.unset(this.includeErrorMessages, "includeErrorMessages");
            this.includeErrorMessages = includeErrorMessages;
            return this;
        }

        public HttpIdempotency build() {
            if (scope == null) {
                throw new IllegalStateException("choose whose intent a key belongs to: scope(ScopeResolver.principal()),"
                        + " a resolver of your own, or, only for a single trusted caller, ScopeResolver.global(name)");
            }
            return new HttpIdempotency(this);
        }
    }
}
