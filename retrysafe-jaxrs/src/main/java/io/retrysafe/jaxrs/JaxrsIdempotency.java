package io.retrysafe.jaxrs;

import io.retrysafe.http.HttpSettings;

/**
 * What the Jakarta REST filter protects and how: the servlet filter's settings ({@link HttpSettings}, shared
 * with it), with the scope read from the request. Immutable; built once.
 *
 * <pre>{@code
 * JaxrsIdempotency config = JaxrsIdempotency.custom()
 *         .route(HttpRoute.of("POST", "/payments").build())
 *         .scope(JaxrsScopeResolver.principal())
 *         .build();
 * }</pre>
 */
public final class JaxrsIdempotency {
    private final HttpSettings<JaxrsScopeResolver> settings;

    private JaxrsIdempotency(HttpSettings<JaxrsScopeResolver> settings) {
        this.settings = settings;
    }

    public static Builder custom() {
        return new Builder();
    }

    HttpSettings<JaxrsScopeResolver> settings() {
        return settings;
    }

    /** The shared settings ({@link HttpSettings.Builder}), with the scope resolved from the request. */
    public static final class Builder extends HttpSettings.Builder<JaxrsScopeResolver, Builder> {
        private Builder() {
            super(JaxrsScopeResolver.class.getSimpleName());
        }

        public JaxrsIdempotency build() {
            return new JaxrsIdempotency(settings());
        }
    }
}
