package io.retrysafe.examples.paymentsreactive;

import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.webflux.ReactiveScopeResolver;
import io.retrysafe.webflux.RetrySafeWebFilter;
import io.retrysafe.webflux.WebFluxIdempotency;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.web.server.WebFilter;
import reactor.core.publisher.Mono;

/** Temporary: RetrySafe wired by hand until the starter configures a reactive application. */
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

    /** The filter, with the handler run in the request's Reactor context (the security context is there). */
    @Bean
    @Order(FILTER_ORDER)
    WebFilter retrySafeWebFilter(R2dbcIdempotencyStore store) {
        RetrySafeWebFilter filter = new RetrySafeWebFilter(WebFluxIdempotency.custom()
                .route(HttpRoute.of("POST", "/payments").keyRequired(true).jsonMembers("/account", "/amount").build())
                .scope(ReactiveScopeResolver.principal()).build(),
                AsyncRetrySafe.builder(store).name("payments-reactive").build());
        return (exchange, chain) -> Mono.deferContextual(context -> filter.filter(exchange,
                handled -> chain.filter(handled).contextWrite(context)));
    }
}
