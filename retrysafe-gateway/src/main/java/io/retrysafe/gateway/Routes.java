package io.retrysafe.gateway;

import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.Problem;
import io.retrysafe.servlet.RejectedRequests;
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
    /** The {@link Decision} made by the non-blocking path before it handed the request to the servlets. */
    static final String DECISION = Routes.class.getName() + ".decision";
    /** Headers some frameworks take as the real method: an upstream would run another method than the one matched. */
    private static final List<String> METHOD_OVERRIDES = List.of("X-HTTP-Method-Override", "X-HTTP-Method",
            "X-Method-Override");

    /** Where a request goes, and how long the gateway waits for it. */
    record Target(URI upstream, Duration responseTimeout, Duration lease) {
    }

    /**
     * One configured route: what it matches, the filter that protects it, where it goes, and its callers;
     * {@code nonBlocking} protects it on the non-blocking path, the servlet filter takes what that path does not.
     */
    record Protected(IdempotentRoute route, Filter filter, Target target, Callers callers, NonBlockingRoute nonBlocking) {
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

    /** What the edge decided for a request: refused, or forwarded (protected by a route's filter, or not). */
    sealed interface Decision {
    }

    /** Not decided yet: naming the caller would wait (a password to check, a key to fetch). */
    record Waits() implements Decision {
    }

    /** Answered by the gateway itself; nothing is forwarded. */
    record Refused(Refusal refusal, String detail, String challenge) implements Decision {
    }

    /** Why a request is refused. */
    enum Refusal {
        /** {@code 400 /problems/request-rejected}. */
        REJECTED,
        /** {@code 401 /problems/unauthenticated}, with the source's challenge. */
        UNAUTHENTICATED,
        /** {@code 404}: no route takes it and there is no default upstream. */
        NOT_FOUND
    }

    /**
     * Forwarded to {@code target}, as {@code method} and {@code path}; {@code route} is null when no route protects the
     * request; {@code caller} and {@code scope} are null where no source of callers applies, or the path is public.
     */
    record Forward(Protected route, Target target, String method, String path, String caller, String scope)
            implements Decision {
    }

    /**
     * Decides a request from its method, its path as sent (still encoded) and its headers. The same decision, whichever
     * server holds the request: the servlet filter's and the non-blocking path's.
     *
     * @param mayWait whether this thread may wait to name the caller; if not, such a request is {@link Waits}
     */
    Decision decide(String method, String raw, Callers.Headers headers, boolean mayWait) {
        if (!HttpPaths.isCanonical(raw)) {
            return new Refused(Refusal.REJECTED, "the path has dot or empty segments, path parameters (';'), a "
                    + "backslash, or an escaped '/' or plain character: servers may read such a path as another one. "
                    + "Send it in its plain form", null);
        }
        for (String header : METHOD_OVERRIDES) {
            if (headers.get(header) != null) {
                return new Refused(Refusal.REJECTED, header + " is not forwarded: the service behind the gateway "
                        + "could run another method than the one the gateway checked. Send the method itself", null);
            }
        }
        Match match = match(method, raw);
        Protected matched = match.route();
        Target target = matched != null ? matched.target() : fallback.orElse(null);
        Callers source = callers(matched, method, raw);
        String caller = null;
        String scope = null;
        if (source != null) {
            if (mayWait) {
                caller = source.caller(headers);
            } else {
                Callers.AtOnce named = source.callerAtOnce(headers);
                if (named == null) {
                    return new Waits();
                }
                caller = named.caller();
            }
            if (caller == null) {
                return new Refused(Refusal.UNAUTHENTICATED, "the request names no caller, or credentials that do not "
                        + "check out", source.challenge());
            }
            scope = source.scope(caller);
        }
        if (target == null) {
            return new Refused(Refusal.NOT_FOUND, "no route of the gateway takes this request, and it has no default "
                    + "upstream", null);
        }
        return new Forward(matched, target, matched != null ? matched.route().method() : method, match.path(), caller,
                scope);
    }

    /** The first route that takes the request, and the path to forward (its spelling); no route: null, as sent. */
    private record Match(Protected route, String path) {
    }

    private Match match(String method, String raw) {
        for (Protected p : routes) {
            String spelled = p.route().route().spelling(method, raw, ignoreCase);
            if (spelled != null) {
                return new Match(p, spelled);
            }
        }
        return new Match(null, raw);
    }

    /** Who must name the caller of a request, or null when nobody need (a public path, or no source applies). */
    private Callers callers(Protected matched, String method, String raw) {
        if (matched != null) {
            return matched.callers();
        }
        return callers.isPresent() && !isPublic(method, raw) ? callers.get() : null;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        HttpServletRequest request = (HttpServletRequest) req;
        HttpServletResponse response = (HttpServletResponse) res;
        // Decided already when the request came through the non-blocking path first.
        Decision decision = request.getAttribute(DECISION) instanceof Decision d ? d
                : decide(request.getMethod(), request.getRequestURI(), request::getHeader, true);
        if (decision instanceof Refused refused) {
            RejectedRequests.refuseUnread(request, response, () -> refuse(response, refused));
            return;
        }
        Forward forward = (Forward) decision;
        if (forward.caller() != null) {
            request.setAttribute(CALLER, forward.caller());
            request.setAttribute(SCOPE, forward.scope());
        }
        request.setAttribute(TARGET, forward.target());
        ForwardedRequest forwarded = new ForwardedRequest(request, forward.method(), forward.path(),
                minRequestDataRate);
        if (forward.route() == null) {
            chain.doFilter(forwarded, response);
        } else {
            forward.route().filter().doFilter(forwarded, response, chain);
        }
    }

    private static void refuse(HttpServletResponse response, Refused refused) throws IOException {
        switch (refused.refusal()) {
            case REJECTED -> Problem.REQUEST_REJECTED.send(response, refused.detail(), null, null);
            case UNAUTHENTICATED -> {
                if (refused.challenge() != null) {
                    response.setHeader("WWW-Authenticate", refused.challenge());
                }
                Problem.UNAUTHENTICATED.send(response, refused.detail(), null, null);
            }
            case NOT_FOUND -> EdgeProblems.send(response, HttpServletResponse.SC_NOT_FOUND, refused.detail());
        }
    }

    /** Bytes a second a body must arrive at, past {@link ForwardedRequest#RATE_GRACE_MILLIS}; 0 for no minimum. */
    long minRequestDataRate() {
        return minRequestDataRate;
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
