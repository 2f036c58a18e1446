package io.retrysafe.spring;

import io.retrysafe.servlet.IdempotentRoute;
import jakarta.servlet.http.HttpServletRequest;

/**
 * Transactional mode's routes that run in standalone mode all the same ({@link AsyncHandlerRoutes} finds them).
 * Its own type, free of Spring MVC, so that what asks it loads without Spring MVC on the class path.
 */
interface StandaloneRoutes {

    /** Whether this route runs in standalone mode; known once the application has started. */
    boolean isStandalone(IdempotentRoute route);

    /** Whether the route the filter applies to this request runs in standalone mode. */
    boolean isStandalone(HttpServletRequest request);
}
