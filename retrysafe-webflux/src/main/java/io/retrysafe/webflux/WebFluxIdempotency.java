package io.retrysafe.webflux;

import io.retrysafe.KeyRules;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSettings;
import java.util.List;
import java.util.Set;

/**
 * What the WebFlux filter protects and how: the servlet filter's settings ({@link HttpSettings}, shared
 * with it), with the scope read from the exchange. Immutable; built once.
 *
 * <pre>{@code
 * WebFluxIdempotency config = WebFluxIdempotency.custom()
 *         .route(HttpRoute.of("POST", "/payments").build())
 *         .scope(ReactiveScopeResolver.principal())
 *         .build();
 * }</pre>
 */
public final class WebFluxIdempotency {
    public static final int DEFAULT_MAX_REQUEST_BYTES = HttpSettings.DEFAULT_MAX_REQUEST_BYTES;
    public static final int DEFAULT_MAX_RESPONSE_BYTES = HttpSettings.DEFAULT_MAX_RESPONSE_BYTES;

    private final HttpSettings<ReactiveScopeResolver> settings;

    private WebFluxIdempotency(HttpSettings<ReactiveScopeResolver> settings) {
        this.settings = settings;
    }

    public static Builder custom() {
        return new Builder();
    }

    /** The settings the servlet filter shares. */
    public HttpSettings<ReactiveScopeResolver> settings() {
        return settings;
    }

    public List<HttpRoute> routes() {
        return settings.routes();
    }

    public ReactiveScopeResolver scope() {
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

    /** The first route matching, in the order configured; null when none does. */
    HttpRoute route(String method, String path) {
        return settings.route(method, path);
    }

    /** The shared settings ({@link HttpSettings.Builder}), with the scope resolved from the exchange. */
    public static final class Builder extends HttpSettings.Builder<ReactiveScopeResolver, Builder> {
        private Builder() {
            super(ReactiveScopeResolver.class.getSimpleName());
        }

        public WebFluxIdempotency build() {
            return new WebFluxIdempotency(settings());
        }
    }
}
