package io.retrysafe.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.retrysafe.internal.Require;
import java.util.Set;
import java.util.UUID;

/**
 * Gives each unary call of the chosen methods one {@code idempotency-key}: a call is one intent. The key is in
 * the call's headers, which grpc-java's own retries (a service config's {@code retryPolicy}, transparent retries,
 * hedging) send again unchanged, so the server runs the call once however many attempts reach it. An application
 * that retries a failed call itself makes a new call: to keep the intent's key, it names the key with
 * {@link #KEY} ({@code stub.withOption(RetrySafeClientInterceptor.KEY, orderId)}). A call whose headers already
 * carry a key keeps it.
 */
public final class RetrySafeClientInterceptor implements ClientInterceptor {
    /** The key for one call, in place of a new random one: the same for every call of the same intent. */
    public static final CallOptions.Key<String> KEY = CallOptions.Key.create("retrysafe-idempotency-key");

    /** Null: every unary method. */
    private final Set<String> methods;

    private RetrySafeClientInterceptor(Set<String> methods) {
        this.methods = methods;
    }

    /** Keys every unary call. */
    public static RetrySafeClientInterceptor allUnaryMethods() {
        return new RetrySafeClientInterceptor(null);
    }

    /** Keys the unary calls of these methods, by full name ({@code package.Service/Method}). */
    public static RetrySafeClientInterceptor methods(String... fullMethodNames) {
        Require.notNull(fullMethodNames, "fullMethodNames");
        for (String name : fullMethodNames) {
            Require.notBlank(name, "fullMethodName");
        }
        return new RetrySafeClientInterceptor(Set.of(fullMethodNames));
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
            CallOptions callOptions, Channel next) {
        ClientCall<ReqT, RespT> call = next.newCall(method, callOptions);
        if (method.getType() != MethodDescriptor.MethodType.UNARY
                || (methods != null && !methods.contains(method.getFullMethodName()))) {
            return call;
        }
        String given = callOptions.getOption(KEY);
        return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
            @Override
            public void start(Listener<RespT> listener, Metadata headers) {
                if (!headers.containsKey(GrpcIdempotency.KEY_HEADER)) {
                    headers.put(GrpcIdempotency.KEY_HEADER, given != null ? given : UUID.randomUUID().toString());
                }
                super.start(listener, headers);
            }
        };
    }

    @Override
    public String toString() {
        return "RetrySafeClientInterceptor[" + (methods == null ? "all unary methods" : methods) + "]";
    }
}
