package io.retrysafe.servlet;

import io.retrysafe.KeyRules;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.HttpSettings;
import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the filter protects and how: the settings every stack shares ({@link HttpSettings}), with the scope
 * read from the servlet request, and how a handler's {@code sendError} message is shown. Immutable; built once.
 *
 * <pre>{@code
 * HttpIdempotency config = HttpIdempotency.custom()
 *         .route(IdempotentRoute.of("POST", "/payments").build())
 *         .scope(ScopeResolver.principal())
 *         .build();
 * }</pre>
 */
public final class HttpIdempotency {
    public static final int DEFAULT_MAX_REQUEST_BYTES = HttpSettings.DEFAULT_MAX_REQUEST_BYTES;
    public static final int DEFAULT_MAX_RESPONSE_BYTES = HttpSettings.DEFAULT_MAX_RESPONSE_BYTES;
    /** Headers replayed with a stored response unless configured otherwise. */
    public static final Set<String> DEFAULT_REPLAYED_HEADERS = HttpSemantics.DEFAULT_REPLAYED_HEADERS;
    /** Never stored, whatever is configured: they carry credentials or per-session state. */
    public static final Set<String> FORBIDDEN_HEADERS = HttpSemantics.FORBIDDEN_HEADERS;
    public static final String HEADER = HttpSemantics.KEY_HEADER;
    /** A handler's {@code sendError} message is not shown (nor stored) unless the application shows such messages. */
    public static final boolean DEFAULT_INCLUDE_ERROR_MESSAGES = false;

    private final HttpSettings<ScopeResolver> settings;
    private final List<IdempotentRoute> routes;
    private final boolean includeErrorMessages;
    private final boolean rawFormBodies;

    private HttpIdempotency(Builder b, HttpSettings<ScopeResolver> settings) {
        this.settings = settings;
        List<IdempotentRoute> routes = new ArrayList<>();
        for (HttpRoute route : settings.routes()) {
            IdempotentRoute given = b.given.get(route);
            routes.add(given == null ? IdempotentRoute.of(route) : given);
        }
        this.routes = List.copyOf(routes);
        this.includeErrorMessages = b.includeErrorMessages == null ? DEFAULT_INCLUDE_ERROR_MESSAGES
                : b.includeErrorMessages;
        this.rawFormBodies = b.rawFormBodies != null && b.rawFormBodies;
    }

    public static Builder custom() {
        return new Builder();
    }

    /** The settings the WebFlux filter shares. */
    public HttpSettings<ScopeResolver> settings() {
        return settings;
    }

    public List<IdempotentRoute> routes() {
        return routes;
    }

    public ScopeResolver scope() {
        return settings.scope();
    }

    public KeyRules keyRules() {
        return settings.keyRules();
    }

    public int maxRequestBytes() {
        return settings.maxRequestBytes();
    }

    public int maxResponseBytes() {
        return settings.maxResponseBytes();
    }

    /** Lower-case names of the headers stored and replayed. */
    public Set<String> replayedHeaders() {
        return settings.replayedHeaders();
    }

    /** Whether the message of a handler's {@code sendError(status, message)} is in the problem the client gets. */
    public boolean includeErrorMessages() {
        return includeErrorMessages;
    }

    /** Whether the handler reads an URL-encoded form's bytes rather than its parameters ({@link Builder#rawFormBodies}). */
    public boolean rawFormBodies() {
        return rawFormBodies;
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

    /** The shared settings ({@link HttpSettings.Builder}), with the servlet filter's own. */
    public static final class Builder extends HttpSettings.Builder<ScopeResolver, Builder> {
        /** The servlet routes given, by the stack-neutral route each is, so that {@link #routes()} returns them. */
        private final Map<HttpRoute, IdempotentRoute> given = new IdentityHashMap<>();
        private Boolean includeErrorMessages;
        private Boolean rawFormBodies;

        private Builder() {
            super(ScopeResolver.class.getSimpleName());
        }

        /**
         * A protected route; the first matching route applies. Without any, POST and PATCH on every
         * path are protected when they carry a key.
         */
        public Builder route(IdempotentRoute route) {
            Require.notNull(route, "route");
            given.put(route.route(), route);
            return route(route.route());
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

        /**
         * Whether the handler reads an URL-encoded form's body as bytes, as a proxy that forwards it does, rather
         * than its parameters: the filter then reads the body itself, fingerprints the fields it parses from it (as
         * a container parses them) and hands the handler the same bytes; the container's {@code getParameter()}
         * then sees the query's fields only. Off by default: the container parses the form, and the handler gets
         * its parameters.
         */
        public Builder rawFormBodies(boolean rawFormBodies) {
            Require.unset(this.rawFormBodies, "rawFormBodies");
            this.rawFormBodies = rawFormBodies;
            return this;
        }

        public HttpIdempotency build() {
            return new HttpIdempotency(this, settings());
        }
    }
}
