package io.retrysafe.spring;

import io.retrysafe.servlet.RetrySafeFilter;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import org.springframework.web.filter.ServerHttpObservationFilter;

/**
 * Tags an answer the RetrySafe filter gave itself (a replay, a refusal) with its route in Spring's
 * {@code http.server.requests} observation. Spring MVC matched no handler for it, so the observation would
 * tag it {@code uri="UNKNOWN"}, and a route's replays would be counted apart from its requests. An answer
 * the handler gave keeps the pattern Spring MVC matched. The servlet filter does not depend on Spring, so
 * the starter does this for it; the WebFlux filter does it itself.
 */
final class RouteObservationFilter implements Filter {
    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        try {
            chain.doFilter(request, response);
        } finally {
            if (request instanceof HttpServletRequest http
                    && http.getAttribute(RetrySafeFilter.ROUTE_ATTRIBUTE) instanceof String pattern) {
                ServerHttpObservationFilter.findObservationContext(http).ifPresent(context -> {
                    if (context.getPathPattern() == null) {
                        context.setPathPattern(pattern);
                    }
                });
            }
        }
    }
}
