package io.retrysafe.spring;

import io.retrysafe.servlet.ScopeResolver;
import java.util.function.Supplier;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The caller of an {@link Idempotent} method, named as the HTTP filter names it: the application's
 * {@link ScopeResolver} over the request the thread serves. Null outside a request, or when the
 * resolver finds no caller in it. Loaded only when the servlet API and Spring Web are present.
 */
final class ServletCaller implements Supplier<String> {
    private final ScopeResolver resolver;

    private ServletCaller(ScopeResolver resolver) {
        this.resolver = resolver;
    }

    /** With the application's {@link ScopeResolver}, or the principal's name when it has none (the filter's default). */
    static ServletCaller of(BeanFactory beans) {
        return new ServletCaller(beans.getBeanProvider(ScopeResolver.class).getIfAvailable(ScopeResolver::principal));
    }

    @Override
    public String get() {
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes attributes) {
            return resolver.resolve(attributes.getRequest());
        }
        return null;
    }
}
