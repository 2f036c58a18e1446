package io.retrysafe.examples.paymentsreactive;

import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.TransactionalR2dbcRetrySafe;
import io.retrysafe.webflux.R2dbcTransactionalExecutor;
import io.retrysafe.webflux.ReactiveScopeResolver;
import io.retrysafe.webflux.RetrySafeWebFilter;
import io.retrysafe.webflux.WebFluxIdempotency;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.transaction.ReactiveTransactionManager;

/** Temporary: RetrySafe wired by hand, in transactional mode, until the starter configures a reactive application. */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "retrysafe.enabled", havingValue = "true", matchIfMissing = true)
class RetrySafeWiring {
    static final int FILTER_ORDER = 0;

    @Bean
    R2dbcIdempotencyStore idempotencyStore(ConnectionFactory connections) {
        R2dbcIdempotencyStore store = R2dbcIdempotencyStore.builder(connections).build();
        store.createSchema().toCompletableFuture().join();
        return store;
    }

    @Bean
    @Order(FILTER_ORDER)
    RetrySafeWebFilter retrySafeWebFilter(R2dbcIdempotencyStore store, ConnectionFactory connections,
            ReactiveTransactionManager transactions) {
        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).name("payments-reactive").build();
        return new RetrySafeWebFilter(WebFluxIdempotency.custom()
                .route(HttpRoute.of("POST", "/payments").keyRequired(true).jsonMembers("/account", "/amount").build())
                .scope(ReactiveScopeResolver.principal()).build(),
                new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(engine), connections, transactions),
                engine.listener());
    }
}
