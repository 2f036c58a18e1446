package io.retrysafe.gateway;

import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.Problem;
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
 * The gateway's edge: what each request is, decided once before anything is forwarded. A path that servers may read
 * in more than one way, or a method-override header, is refused ({@code 400}). The configured routes are tried in
 * order: the first that matches protects the request with its own {@link io.retrysafe.servlet.RetrySafeFilter}, names
 * its upstream, and gives the path to forward (the route's own spelling). A request no route matches goes to the
 * default upstream unprotected, or is answered {@code 404}. Every request, protected or not, needs a caller that
 * checks out ({@code 401} otherwise) unless its path is public or no source of callers applies to it; the caller is
 * what the upstream is told, in a header of the gateway's own.
 */
final class Routes implements Filter {
    /** The request's {@link Target}. */
    private static final String TARGET = Routes.class.getName() + ".target";
    /** The checked caller's name; absent on a public path or where no source of callers applies. */
    static final String CALLER = Routes.class.getName() + ".caller";
    /** The scope the caller's keys are stored under (what the route's filter asks for). */
    static final String SCOPE = Routes.class.getName() + ".scope";
    /** Headers some frameworks take as the real method: an upstream would run another method than the one matched. */
    private static final List<String> METHOD_OVERRIDES = List.of("X-HTTP-Method-Override", "X-HTTP-Method",
            "X-Method-Override");

    /** Where a request goes, and how long the gateway waits for it. */
    record Target(URI upstream, Duration responseTimeout, Duration lease) {
    }

    /** One configured route: what it matches, the filter that protects it, where it goes, and its callers. */
    record Protected(IdempotentRoute route, Filter filter, Target target, Callers callers) {
    }

    private final List<Protected> routes;
    private final Optional<Target> fallback;
    private final Optional<Callers> callers;
    private final List<HttpRoute> publicRoutes;
    private final boolean ignoreCase;
    private final long minRequestDataRate;

    /**
     * @param callers who the callers of requests no route matches are; empty when only routes name callers
     * @param minRequestDataRate bytes a second a body must arrive at (after {@link ForwardedRequest#RATE_GRACE_MILLIS})
     */
    Routes(List<Protected> routes, Optional<Target> fallback, Optional<Callers> callers, List<HttpRoute> publicRoutes,
            boolean ignoreCase, long minRequestDataRate) {
        this.routes = List.copyOf(routes);
        this.fallback = fallback;
        this.callers = callers;
        this.publicRoutes = List.copyOf(publicRoutes);
        this.ignoreCase = ignoreCase;
        this.minRequestDataRate = minRequestDataRate;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        HttpServletRequest request = (HttpServletRequest) req;
        HttpServletResponse response = (HttpServletResponse) res;
        String raw = request.getRequestURI();
        if (!HttpPaths.isCanonical(raw)) {
            Problem.REQUEST_REJECTED.send(response, "the path has dot or empty segments, path parameters (';'), a "
                    + "backslash, or an escaped '/' or plain character: servers may read such a path as another one. "
                    + "Send it in its plain form", null, null);
            return;
        }
        for (String header : METHOD_OVERRIDES) {
            if (request.getHeader(header) != null) {
                Problem.REQUEST_REJECTED.send(response, header + " is not forwarded: the service behind the gateway "
                        + "could run another method than the one the gateway checked. Send the method itself", null,
                        null);
                return;
            }
        }
        Protected matched = null;
        String path = raw;
        for (Protected p : routes) {
            String spelled = p.route().route().spelling(request.getMethod(), raw, ignoreCase);
            if (spelled != null) {
                matched = p;
                path = spelled;
                break;
            }
        }
        Target target = matched != null ? matched.target() : fallback.orElse(null);
        Optional<Callers> source = matched != null ? Optional.of(matched.callers()) : callers;
        if (source.isPresent() && (matched != null || !isPublic(request.getMethod(), raw))) {
            String caller = source.get().caller(request);
            if (caller == null) {
                if (source.get().challenge() != null) {
                    response.setHeader("WWW-Authenticate", source.get().challenge());
                }
                Problem.UNAUTHENTICATED.send(response, "the request names no caller, or credentials that do not check "
                        + "out", null, null);
                return;
            }
            request.setAttribute(CALLER, caller);
            request.setAttribute(SCOPE, source.get().scope(caller));
        }
        if (target == null) {
            EdgeProblems.send(response, HttpServletResponse.SC_NOT_FOUND, "no route of the gateway takes this request, "
                    + "and it has no default upstream");
            return;
        }
        request.setAttribute(TARGET, target);
        if (matched == null) {
            chain.doFilter(new ForwardedRequest(request, request.getMethod(), raw, minRequestDataRate), response);
        } else {
            matched.filter().doFilter(new ForwardedRequest(request, matched.route().method(), path,
                    minRequestDataRate), response, chain);
        }
    }

    private boolean isPublic(String method, String path) {
        for (HttpRoute r : publicRoutes) {
            if (r.spelling(method, path, ignoreCase) != null) {
                return true;
            }
        }
        return false;
    }

    /** Where the request goes (set by {@link #doFilter}). */
    static Target target(HttpServletRequest request) {
        return (Target) request.getAttribute(TARGET);
    }
}
