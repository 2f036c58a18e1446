package io.retrysafe.grpc;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.retrysafe.internal.Require;

/**
 * Names the caller whose intent a call carries, so that one caller's key can never replay another's answer.
 * Returns {@code null} when the call has no authenticated caller; the interceptor then refuses it with
 * {@code UNAUTHENTICATED} rather than falling back to a shared scope.
 */
@FunctionalInterface
public interface CallerResolver {

    String resolve(ServerCall<?, ?> call, Metadata headers);

    /**
     * The value the application's authentication interceptor put under {@code key} in the call's {@link Context}
     * (with {@code Contexts.interceptCall}, registered so that it runs before RetrySafe's interceptor). A blank
     * value names no caller.
     */
    static CallerResolver context(Context.Key<String> key) {
        Require.notNull(key, "key");
        return (call, headers) -> {
            String caller = key.get();
            return caller == null || caller.isBlank() ? null : caller;
        };
    }
}
