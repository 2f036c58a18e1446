package io.retrysafe.quarkus;

import io.retrysafe.jaxrs.RetrySafeFeature;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.ws.rs.core.Feature;
import jakarta.ws.rs.core.FeatureContext;
import jakarta.ws.rs.ext.Providers;
import jakarta.ws.rs.ext.Provider;

/**
 * Registers RetrySafe's Jakarta REST filters with Quarkus REST; the extension adds it to the application, which has
 * nothing to register itself. Quarkus REST configures features while the application is initialised, before its
 * run-time configuration and datasources exist: the filters are {@linkplain RetrySafeFeature#deferred deferred}, and
 * build the configured feature on the first request. Quarkus REST injects no {@code @Context} into the filter the
 * feature registers: the entity's writer is looked up in its {@code Providers} bean.
 */
@Provider
public final class RetrySafeRegistration implements Feature {
    private final Instance<RetrySafeConfig> config;
    private final Instance<RetrySafeFeature> feature;
    private final Instance<Providers> providers;

    @Inject
    RetrySafeRegistration(Instance<RetrySafeConfig> config, Instance<RetrySafeFeature> feature,
            Instance<Providers> providers) {
        this.config = config;
        this.feature = feature;
        this.providers = providers;
    }

    @Override
    public boolean configure(FeatureContext context) {
        return RetrySafeFeature.deferred(() -> config.get().enabled() ? feature.get() : null, providers::get)
                .configure(context);
    }
}
