package io.retrysafe.spring;

import io.retrysafe.servlet.Problem;
import io.retrysafe.servlet.RetrySafeFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.core.ResolvableType;
import org.springframework.http.HttpEntity;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.WebAsyncTask;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * Refuses, before it runs, a controller method on a protected request whose answer the filter cannot record:
 * a streamed body ({@link StreamingResponseBody}, {@link ResponseBodyEmitter}, {@code SseEmitter}) on any
 * route, and an asynchronous one ({@link CompletionStage}, {@link DeferredResult}, {@link Callable},
 * {@link WebAsyncTask}) where the executor's transaction cannot outlive the request thread. The refusal is a
 * {@code 500} problem, so the key is released and nothing is stored.
 */
final class RetrySafeHandlerGuard implements HandlerInterceptor {
    /** Each controller method's answer type, resolved once: a method's generic return type does not change. */
    private final Map<Method, Class<?>> answerTypes = new ConcurrentHashMap<>();

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws IOException {
        Object asyncSupported = request.getAttribute(RetrySafeFilter.ASYNC_SUPPORTED_ATTRIBUTE);
        if (asyncSupported == null || request.getDispatcherType() != DispatcherType.REQUEST
                || !(handler instanceof HandlerMethod method)) {
            return true;
        }
        Class<?> returned = answerTypes.computeIfAbsent(method.getMethod(), RetrySafeHandlerGuard::answerType);
        if (StreamingResponseBody.class.isAssignableFrom(returned) || ResponseBodyEmitter.class.isAssignableFrom(returned)) {
            Problem.STREAMING_REFUSED.send(response, method.getShortLogMessage() + " streams its body ("
                    + returned.getSimpleName() + "), which cannot be stored and replayed; take it off the idempotent "
                    + "routes, or return the whole body", null, null);
            return false;
        }
        if (isAsynchronous(returned) && !Boolean.TRUE.equals(asyncSupported)) {
            Problem.ASYNC_HANDLER_REFUSED.send(response, method.getShortLogMessage() + " answers asynchronously ("
                    + returned.getSimpleName() + "), and a transactional route's transaction cannot outlive the "
                    + "request thread; return the answer itself, or set retrysafe.mode=standalone", null, null);
            return false;
        }
        return true;
    }

    /** What a controller method answers with: its return type, or the body type of a {@code ResponseEntity}. */
    static Class<?> answerType(Method method) {
        ResolvableType type = ResolvableType.forMethodReturnType(method);
        if (HttpEntity.class.isAssignableFrom(type.toClass())) {
            type = type.as(HttpEntity.class).getGeneric(0);
        }
        return type.toClass();
    }

    /** Whether Spring MVC answers a method that returns this after the request thread has returned. */
    static boolean isAsynchronous(Class<?> answerType) {
        return CompletionStage.class.isAssignableFrom(answerType) || DeferredResult.class.isAssignableFrom(answerType)
                || Callable.class.isAssignableFrom(answerType) || WebAsyncTask.class.isAssignableFrom(answerType);
    }
}
