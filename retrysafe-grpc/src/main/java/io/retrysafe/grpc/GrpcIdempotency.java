package io.retrysafe.grpc;

import io.grpc.Metadata;
import io.retrysafe.KeyRules;
import io.retrysafe.internal.Require;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@link RetrySafeServerInterceptor} protects and how: the unary methods by full name, each with its key
 * required or optional, the caller a key is scoped to, and the key rules. Immutable; built once.
 *
 * <pre>{@code
 * GrpcIdempotency config = GrpcIdempotency.custom()
 *         .method("payments.v1.Payments/Pay")
 *         .caller(CallerResolver.context(AuthInterceptor.CALLER))
 *         .build();
 * }</pre>
 */
public final class GrpcIdempotency {
    /** The request header that carries the key: ASCII, one value, as the HTTP {@code Idempotency-Key}. */
    public static final Metadata.Key<String> KEY_HEADER =
            Metadata.Key.of("idempotency-key", Metadata.ASCII_STRING_MARSHALLER);
    /** Set to {@code true} in the trailers of a stored answer sent again. */
    public static final Metadata.Key<String> REPLAYED_TRAILER =
            Metadata.Key.of("idempotent-replayed", Metadata.ASCII_STRING_MARSHALLER);

    private final Map<String, Boolean> keyRequired;
    private final CallerResolver caller;
    private final KeyRules keyRules;

    private GrpcIdempotency(Builder b) {
        this.keyRequired = Map.copyOf(b.keyRequired);
        this.caller = b.caller;
        this.keyRules = b.keyRules == null ? KeyRules.DEFAULT : b.keyRules;
    }

    public static Builder custom() {
        return new Builder();
    }

    public CallerResolver caller() {
        return caller;
    }

    public KeyRules keyRules() {
        return keyRules;
    }

    /** Whether the method is protected. */
    public boolean protects(String fullMethodName) {
        return keyRequired.containsKey(fullMethodName);
    }

    /** Whether a call of a protected method without a key is refused (else it runs unprotected). */
    public boolean keyRequired(String fullMethodName) {
        return Boolean.TRUE.equals(keyRequired.get(fullMethodName));
    }

    @Override
    public String toString() {
        return "GrpcIdempotency[methods=" + keyRequired + ", keyRules=" + keyRules + "]";
    }

    public static final class Builder {
        private final Map<String, Boolean> keyRequired = new LinkedHashMap<>();
        private CallerResolver caller;
        private KeyRules keyRules;

        private Builder() {
        }

        /** A protected unary method, by its full name ({@code package.Service/Method}); a call without a key is refused. */
        public Builder method(String fullMethodName) {
            return add(fullMethodName, true);
        }

        /** A protected unary method whose calls without a key run unprotected. */
        public Builder methodKeyOptional(String fullMethodName) {
            return add(fullMethodName, false);
        }

        private Builder add(String fullMethodName, boolean required) {
            Require.notBlank(fullMethodName, "fullMethodName");
            if (fullMethodName.indexOf('/') < 1) {
                throw new IllegalArgumentException("fullMethodName must be package.Service/Method, but was "
                        + fullMethodName);
            }
            Require.unset(keyRequired.get(fullMethodName), "method " + fullMethodName);
            keyRequired.put(fullMethodName, required);
            return this;
        }

        public Builder caller(CallerResolver caller) {
            Require.unset(this.caller, "caller");
            this.caller = Require.notNull(caller, "caller");
            return this;
        }

        /** The rules a key's value must satisfy; {@link KeyRules#DEFAULT} unless set. */
        public Builder keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return this;
        }

        public GrpcIdempotency build() {
            Require.set(caller, "caller", "a key is scoped to the caller that sent it");
            if (keyRequired.isEmpty()) {
                throw new IllegalStateException("at least one method must be protected");
            }
            return new GrpcIdempotency(this);
        }
    }
}
