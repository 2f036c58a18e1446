package io.retrysafe.spring;

import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;

/** Builds the real interceptor on the first intercepted call, once. */
final class LazyInterceptor implements MethodInterceptor {
    private final Supplier<MethodInterceptor> factory;
    private volatile MethodInterceptor delegate;

    LazyInterceptor(Supplier<MethodInterceptor> factory) {
        this.factory = factory;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        MethodInterceptor d = delegate;
        if (d == null) {
            synchronized (this) {
                if (delegate == null) {
                    delegate = factory.get();
                }
                d = delegate;
            }
        }
        return d.invoke(invocation);
    }
}
