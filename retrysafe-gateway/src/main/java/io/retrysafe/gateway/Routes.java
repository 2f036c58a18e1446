package io.retrysafe.gateway;

import io.retrysafe.servlet.IdempotentRoute;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The configured routes, in order: the first that matches a request protects it with its own
 * {@link io.retrysafe.servlet.RetrySafeFilter} and names its upstream. A request no route matches goes to the
 * default upstream unprotected (or gets {@code 404} when there is none).
 */
final class Routes implements Filter {
    private static final String MATCHED = Routes.class.getName() + ".matched";

    /** Where a request goes, and how long the gateway waits for it. */
    record Target(URI upstream, Duration responseTimeout, Duration lease) {
    }

    /**
     * One configured route: what it matches, the filter that protects it, where it goes, and the
     * {@code WWW-Authenticate} challenge of its callers' source (null for none).
     */
    record Protected(IdempotentRoute route, Filter filter, Target target, String challenge) {
    }

    private final List<Protected> routes;
    private final Optional<Target> fallback;

    Routes(List<Protected> routes, Optional<Target> fallback) {
        this.routes = List.copyOf(routes);
        this.fallback = fallback;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        if (req instanceof HttpServletRequest request) {
            for (Protected p : routes) {
                if (p.route().matches(request)) {
                    request.setAttribute(MATCHED, p.target());
                    p.filter().doFilter(req, p.challenge() != null && res instanceof HttpServletResponse response
                            ? new ChallengingResponse(response, p.challenge()) : res, chain);
                    return;
                }
            }
        }
        chain.doFilter(req, res);
    }

    /** Where the request goes: its route's upstream, else the default; null for none. */
    Target target(HttpServletRequest request) {
        Object matched = request.getAttribute(MATCHED);
        return matched instanceof Target t ? t : fallback.orElse(null);
    }
}
