package io.retrysafe.spring;

import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.http.server.PathContainer;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping;
import org.springframework.web.util.pattern.PathPatternParser;

/**
 * Transactional mode's routes that a Spring MVC handler answering asynchronously ({@code CompletableFuture},
 * {@code DeferredResult}, {@code Callable}, {@code WebAsyncTask}) may serve, found at start-up from the handler
 * mappings: a transaction bound to the request thread cannot follow such work, so every request would be
 * refused. Such a route runs in standalone mode instead, said in a log line, or, with
 * {@code retrysafe.http.async-transactional=fail}, the application does not start.
 */
final class AsyncHandlerRoutes implements StandaloneRoutes, SmartInitializingSingleton {
    private static final System.Logger LOG = System.getLogger(AsyncHandlerRoutes.class.getName());

    private final ListableBeanFactory beans;
    private final HttpIdempotency config;
    private final RetrySafeProperties properties;
    private volatile Set<IdempotentRoute> standalone = Set.of();

    AsyncHandlerRoutes(ListableBeanFactory beans, HttpIdempotency config, RetrySafeProperties properties) {
        this.beans = beans;
        this.config = config;
        this.properties = properties;
    }

    @Override
    public boolean isStandalone(HttpServletRequest request) {
        Set<IdempotentRoute> routes = standalone;
        if (routes.isEmpty()) {
            return false;
        }
        for (IdempotentRoute route : config.routes()) {
            if (route.matches(request)) {
                return routes.contains(route);
            }
        }
        return false;
    }

    @Override
    public boolean isStandalone(IdempotentRoute route) {
        return standalone.contains(route);
    }

    /** Once the handler mappings know their handlers. */
    @Override
    public void afterSingletonsInstantiated() {
        Map<IdempotentRoute, List<String>> found = find();
        if (found.isEmpty()) {
            return;
        }
        if (properties.http().asyncTransactional() == RetrySafeProperties.AsyncTransactional.FAIL) {
            throw new IllegalStateException("retrysafe.http.async-transactional=fail, and " + describe(found)
                    + ": a transaction bound to the request thread cannot follow the handler's work. Answer "
                    + "synchronously, take the route off retrysafe.http.routes, or set "
                    + "retrysafe.http.async-transactional=standalone to run it in standalone mode");
        }
        LOG.log(Level.WARNING, () -> "[" + properties.name() + "] " + describe(found) + ": "
                + (found.size() == 1 ? "this route runs" : "these routes run") + " in standalone mode, not "
                + "transactional: the key commits before the handler runs, as a transaction bound to the request "
                + "thread cannot follow the handler's work. retrysafe.http.async-transactional=fail refuses to start "
                + "instead");
        standalone = Set.copyOf(found.keySet());
    }

    private static String describe(Map<IdempotentRoute, List<String>> found) {
        List<String> each = new ArrayList<>();
        found.forEach((route, handlers) -> each.add(route + " has an asynchronous handler: "
                + String.join(", ", handlers)));
        return String.join("; ", each);
    }

    /** Each protected route, in the order configured, with the asynchronous handlers that may serve it. */
    private Map<IdempotentRoute, List<String>> find() {
        Map<RequestMappingInfo, HandlerMethod> asynchronous = new LinkedHashMap<>();
        for (RequestMappingInfoHandlerMapping mapping : beans.getBeansOfType(RequestMappingInfoHandlerMapping.class,
                false, false).values()) {
            mapping.getHandlerMethods().forEach((info, method) -> {
                if (RetrySafeHandlerGuard.isAsynchronous(RetrySafeHandlerGuard.answerType(method.getMethod()))) {
                    asynchronous.put(info, method);
                }
            });
        }
        Map<IdempotentRoute, List<String>> found = new LinkedHashMap<>();
        for (IdempotentRoute route : config.routes()) {
            asynchronous.forEach((info, method) -> {
                if (serves(info, route)) {
                    found.computeIfAbsent(route, r -> new ArrayList<>()).add(describe(method));
                }
            });
        }
        return found;
    }

    private static String describe(HandlerMethod method) {
        return method.getBeanType().getSimpleName() + "#" + method.getMethod().getName() + " ("
                + RetrySafeHandlerGuard.answerType(method.getMethod()).getSimpleName() + ")";
    }

    /**
     * Whether a request the route protects may reach the mapping's handler: a method both take, and a path both
     * match, tried both ways on a path made from each pattern ({@code x} for each variable or wildcard).
     */
    private static boolean serves(RequestMappingInfo info, IdempotentRoute route) {
        Set<RequestMethod> methods = info.getMethodsCondition().getMethods();
        if (!methods.isEmpty() && methods.stream().noneMatch(m -> m.name().equals(route.method()))) {
            return false;
        }
        String routePath = example(route.pattern());
        for (String pattern : info.getPatternValues()) {
            if (route.route().matches(route.method(), example(pattern)) || matches(pattern, routePath)) {
                return true;
            }
        }
        return false;
    }

    private static boolean matches(String pattern, String path) {
        try {
            return PathPatternParser.defaultInstance.parse(pattern).matches(PathContainer.parsePath(path));
        } catch (IllegalArgumentException e) {
            return false; // a pattern in another syntax (AntPathMatcher's): the other direction decides
        }
    }

    /** A path the pattern matches, as far as one segment of {@code x} stands for any variable or wildcard. */
    private static String example(String pattern) {
        StringBuilder path = new StringBuilder();
        for (String segment : pattern.split("/")) {
            if (!segment.isEmpty()) {
                path.append('/').append(segment.indexOf('{') >= 0 || segment.indexOf('*') >= 0
                        || segment.indexOf('?') >= 0 ? "x" : segment);
            }
        }
        return path.isEmpty() ? "/" : path.toString();
    }
}
