package io.retrysafe.quarkus;

import io.agroal.api.AgroalDataSource;
import io.quarkus.agroal.DataSource;
import io.quarkus.runtime.StartupEvent;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.jaxrs.RetrySafeFeature;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Default;
import jakarta.enterprise.inject.Instance;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;

/**
 * The engine on the configured Agroal datasource, and the Jakarta REST feature in the configured mode, built once
 * from {@code retrysafe.*}. An application may inject the {@link RetrySafe} engine for work beyond HTTP.
 */
@Singleton
final class RetrySafeProducer {

    @Produces
    @Singleton
    JdbcIdempotencyStore store(RetrySafeConfig config, @Any Instance<AgroalDataSource> dataSources) {
        AgroalDataSource dataSource = config.datasource()
                .map(name -> dataSources.select(new DataSource.DataSourceLiteral(name)).get())
                .orElseGet(() -> dataSources.select(Default.Literal.INSTANCE).get());
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).table(config.store().table())
                .lockTimeout(config.store().lockTimeout()).build();
        if (config.store().initializeSchema()) {
            store.createSchema();
        }
        return store;
    }

    @Produces
    @Singleton
    RetrySafe engine(RetrySafeConfig config, JdbcIdempotencyStore store) {
        return RetrySafe.builder(store).name(config.name()).policy(Settings.policy(config.policy())).build();
    }

    /**
     * Builds the feature at start-up, so that a wrong setting stops the application and the records table exists
     * before the first request; the filters, registered earlier, pick up this same instance.
     */
    void start(@Observes StartupEvent started, RetrySafeConfig config, Instance<RetrySafeFeature> feature) {
        if (config.enabled()) {
            feature.get();
        }
    }

    @Produces
    @Singleton
    RetrySafeFeature feature(RetrySafeConfig config, RetrySafe engine) {
        OperationPolicy policy = engine.policy();
        return switch (config.mode()) {
            case TRANSACTIONAL -> RetrySafeFeature.transactional(Settings.jaxrs(config, policy),
                    TransactionalRetrySafe.of(engine));
            case STANDALONE -> RetrySafeFeature.standalone(Settings.jaxrs(config, policy), engine);
        };
    }
}
