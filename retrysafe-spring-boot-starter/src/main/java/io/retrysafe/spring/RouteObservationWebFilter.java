package io.retrysafe.spring;

import io.retrysafe.webflux.RetrySafeWebFilter;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Tags an answer the RetrySafe filter gave itself (a replay, a refusal) with its route in Spring's
 * {@code http.server.requests} observation, as {@link RouteObservationFilter} does for Spring MVC: Spring
 * WebFlux matched no handler for it, and would tag it {@code uri="UNKNOWN"}.
 */
final class RouteObservationWebFilter implements WebFilter {
    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        // Before the end reaches the observation, which is stopped downstream of this filter.
        return chain.filter(exchange).doOnTerminate(() -> tag(exchange));
    }

    private static void tag(ServerWebExchange exchange) {
        if (exchange.getAttribute(RetrySafeWebFilter.ROUTE_ATTRIBUTE) instanceof String pattern) {
            ServerRequestObservationContext.findCurrent(exchange.getAttributes()).ifPresent(context -> {
                if (context.getPathPattern() == null) {
                    context.setPathPattern(pattern);
                }
            });
        }
    }
}
