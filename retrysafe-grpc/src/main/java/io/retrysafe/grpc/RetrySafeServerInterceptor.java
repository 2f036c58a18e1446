package io.retrysafe.grpc;

import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.List;

/**
 * Server-side idempotency for the unary methods {@link GrpcIdempotency} names, keyed by the
 * {@code idempotency-key} request header:
 *
 * <ul>
 * <li>missing key where required, or one that breaks the key rules (or sent as {@code idempotency-key-bin})
 *     → {@code INVALID_ARGUMENT};
 * <li>no caller to scope the key to → {@code UNAUTHENTICATED};
 * <li>first call → runs; its answer (message, status, headers and trailers) is held back until its outcome is
 *     recorded, then sent;
 * <li>retry → the stored answer, its message parsed from the bytes first written, with the trailer
 *     {@code idempotent-replayed: true} ({@code INTERNAL} if the method can no longer parse them);
 * <li>retry while the first is in flight → {@code ABORTED} with the retry delay ({@code google.rpc.RetryInfo});
 * <li>same key, another request → {@code FAILED_PRECONDITION};
 * <li>store unreachable, or the outcome could not be recorded → {@code UNAVAILABLE} with the retry delay;
 * <li>the handler throws → {@code UNKNOWN}, nothing stored, the key released: a retry runs it again.
 * </ul>
 *
 * A streaming method named in the configuration is refused with {@code UNIMPLEMENTED}: its messages cannot be
 * held back as one answer. Calls of other methods, and calls without a key where it is optional, pass through.
 * Register it so that the application's authentication interceptor runs first (with
 * {@code ServerInterceptors.intercept(service, retrySafe, auth)}, the last one listed runs first).
 */
public final class RetrySafeServerInterceptor implements ServerInterceptor {
    static final Metadata.Key<byte[]> BINARY_KEY_HEADER =
            Metadata.Key.of(GrpcIdempotency.KEY_HEADER.name() + Metadata.BINARY_HEADER_SUFFIX,
                    Metadata.BINARY_BYTE_MARSHALLER);

    private final GrpcIdempotency config;
    private final RetrySafe engine;

    public RetrySafeServerInterceptor(GrpcIdempotency config, RetrySafe engine) {
        this.config = Require.notNull(config, "config");
        this.engine = Require.notNull(engine, "engine");
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
            ServerCallHandler<ReqT, RespT> next) {
        MethodDescriptor<ReqT, RespT> method = call.getMethodDescriptor();
        String name = method.getFullMethodName();
        if (!config.protects(name)) {
            return next.startCall(call, headers);
        }
        if (method.getType() != MethodDescriptor.MethodType.UNARY) {
            return refuse(call, Refusal.of(Status.Code.UNIMPLEMENTED, name + " is a streaming method: RetrySafe "
                    + "protects unary methods only"));
        }
        List<String> keys = new ArrayList<>();
        Iterable<String> values = headers.getAll(GrpcIdempotency.KEY_HEADER);
        if (values != null) {
            values.forEach(keys::add);
        }
        boolean binary = headers.containsKey(BINARY_KEY_HEADER);
        if (keys.isEmpty() && !binary && !config.keyRequired(name)) {
            return next.startCall(call, headers);
        }
        String value;
        try {
            if (binary) {
                throw new InvalidKeyException(InvalidKeyException.Rule.MALFORMED, "the idempotency key must be "
                        + "sent as the ASCII header idempotency-key, not as idempotency-key-bin");
            }
            value = config.keyRules().parseHeader(keys);
        } catch (InvalidKeyException e) {
            engine.listener().onInvalidKey(e);
            return refuse(call, Refusal.of(Status.Code.INVALID_ARGUMENT, e.getMessage()));
        }
        String caller = config.caller().resolve(call, headers);
        if (caller == null) {
            return refuse(call, Refusal.of(Status.Code.UNAUTHENTICATED, "no authenticated caller to scope the "
                    + "idempotency key to"));
        }
        IdempotencyKey key;
        try {
            // One key is one intent of one caller on one method.
            key = config.keyRules().key(caller + "|" + name, value);
        } catch (IllegalArgumentException e) {
            return refuse(call, Refusal.of(Status.Code.UNAUTHENTICATED, "the caller's identity cannot scope a key: "
                    + e.getMessage()));
        }
        return new ProtectedCall<>(call, headers, next, key, engine);
    }

    private static <ReqT> ServerCall.Listener<ReqT> refuse(ServerCall<ReqT, ?> call, Refusal refusal) {
        call.close(refusal.status(), refusal.trailers());
        return new ServerCall.Listener<>() {
        };
    }

    @Override
    public String toString() {
        return "RetrySafeServerInterceptor[" + config + ", engine=" + engine.name() + "]";
    }
}
