package io.retrysafe.grpc;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A payments service defined by hand (no generated code): {@code Pay} runs once per intent, and counts its runs by
 * the request's {@code ref}; what it answers is chosen by the request's {@code outcome}.
 */
final class PaymentsService {
    static final String SERVICE = "test.Payments";
    static final MethodDescriptor<Struct, Struct> PAY = unary("Pay");
    static final MethodDescriptor<Struct, Struct> QUOTE = unary("Quote");
    static final MethodDescriptor<Struct, Struct> WATCH = MethodDescriptor.<Struct, Struct>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Watch"))
            .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
            .build();
    /** Its response marshaller writes and cannot read: a replay cannot parse what it stored. */
    static final MethodDescriptor<Struct, Struct> RECEIPT_WRITE_ONLY = MethodDescriptor.<Struct, Struct>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Receipt"))
            .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
            .setResponseMarshaller(new WriteOnlyMarshaller())
            .build();
    /** {@code Receipt} as a client sees it: the answer's bytes. */
    static final MethodDescriptor<Struct, byte[]> RECEIPT_RAW = RECEIPT_WRITE_ONLY.toBuilder(
            ProtoUtils.marshaller(Struct.getDefaultInstance()), new BytesMarshaller()).build();
    /** {@code Pay} as a client that reads the answer's bytes as they came. */
    static final MethodDescriptor<Struct, byte[]> PAY_RAW = PAY.toBuilder(
            ProtoUtils.marshaller(Struct.getDefaultInstance()), new BytesMarshaller()).build();

    static final Metadata.Key<String> CALLER_HEADER = Metadata.Key.of("x-caller", Metadata.ASCII_STRING_MARSHALLER);
    static final Context.Key<String> CALLER = Context.key("caller");
    static final Metadata.Key<String> PAYMENT_ID = Metadata.Key.of("payment-id", Metadata.ASCII_STRING_MARSHALLER);
    static final Metadata.Key<byte[]> RECEIPT = Metadata.Key.of("receipt-bin", Metadata.BINARY_BYTE_MARSHALLER);
    static final Metadata.Key<String> SERVED_BY = Metadata.Key.of("served-by", Metadata.ASCII_STRING_MARSHALLER);
    static final Metadata.Key<String> SET_COOKIE = Metadata.Key.of("set-cookie", Metadata.ASCII_STRING_MARSHALLER);
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization",
            Metadata.ASCII_STRING_MARSHALLER);

    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> GATES = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> ENTERED = new ConcurrentHashMap<>();

    private PaymentsService() {
    }

    private static MethodDescriptor<Struct, Struct> unary(String name) {
        return MethodDescriptor.<Struct, Struct>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
                .setResponseMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
                .build();
    }

    static int runs(String ref) {
        AtomicInteger n = RUNS.get(ref);
        return n == null ? 0 : n.get();
    }

    /** Calls of {@code ref} with outcome {@code wait} hold until {@link #open}; {@link #entered} counts down on entry. */
    static void gate(String ref) {
        GATES.put(ref, new CountDownLatch(1));
        ENTERED.put(ref, new CountDownLatch(1));
    }

    static boolean entered(String ref) throws InterruptedException {
        return ENTERED.get(ref).await(30, TimeUnit.SECONDS);
    }

    static void open(String ref) {
        GATES.get(ref).countDown();
    }

    static Struct request(String ref, double amount, String outcome) {
        return Struct.newBuilder()
                .putFields("ref", Value.newBuilder().setStringValue(ref).build())
                .putFields("amount", Value.newBuilder().setNumberValue(amount).build())
                .putFields("outcome", Value.newBuilder().setStringValue(outcome).build())
                .build();
    }

    static ServerServiceDefinition definition() {
        return ServerServiceDefinition.builder(SERVICE)
                .addMethod(PAY, ServerCalls.asyncUnaryCall((request, observer) -> {
                    String ref = request.getFieldsOrThrow("ref").getStringValue();
                    int run = RUNS.computeIfAbsent(ref, r -> new AtomicInteger()).incrementAndGet();
                    String outcome = request.getFieldsOrThrow("outcome").getStringValue();
                    switch (outcome) {
                        case "throw" -> throw new IllegalStateException("the ledger is down");
                        case "throw-once" -> {
                            if (run == 1) {
                                throw new IllegalStateException("the ledger is down");
                            }
                        }
                        case "unavailable-twice" -> {
                            if (run <= 2) {
                                observer.onError(Status.UNAVAILABLE.withDescription("busy").asRuntimeException());
                                return;
                            }
                        }
                        case "not-found" -> {
                            Metadata trailers = new Metadata();
                            trailers.put(PAYMENT_ID, "none-" + run);
                            observer.onError(Status.NOT_FOUND.withDescription("no account for " + ref)
                                    .asRuntimeException(trailers));
                            return;
                        }
                        case "wait" -> {
                            ENTERED.get(ref).countDown();
                            try {
                                if (!GATES.get(ref).await(30, TimeUnit.SECONDS)) {
                                    throw new IllegalStateException("the gate was not opened");
                                }
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                                throw new IllegalStateException(e);
                            }
                        }
                        default -> {
                        }
                    }
                    Struct reply = Struct.newBuilder()
                            .putFields("paid", request.getFieldsOrThrow("amount"))
                            .putFields("run", Value.newBuilder().setNumberValue(run).build())
                            .build();
                    observer.onNext(reply);
                    observer.onCompleted();
                }))
                .addMethod(RECEIPT_WRITE_ONLY, ServerCalls.asyncUnaryCall((request, observer) -> {
                    RUNS.computeIfAbsent(request.getFieldsOrThrow("ref").getStringValue(), r -> new AtomicInteger())
                            .incrementAndGet();
                    observer.onNext(request);
                    observer.onCompleted();
                }))
                .addMethod(QUOTE, ServerCalls.asyncUnaryCall((request, observer) -> {
                    String ref = request.getFieldsOrThrow("ref").getStringValue();
                    int run = RUNS.computeIfAbsent(ref, r -> new AtomicInteger()).incrementAndGet();
                    observer.onNext(Struct.newBuilder()
                            .putFields("run", Value.newBuilder().setNumberValue(run).build()).build());
                    observer.onCompleted();
                }))
                .addMethod(WATCH, ServerCalls.asyncServerStreamingCall((request, observer) -> {
                    RUNS.computeIfAbsent(request.getFieldsOrThrow("ref").getStringValue(), r -> new AtomicInteger())
                            .incrementAndGet();
                    observer.onNext(request);
                    observer.onCompleted();
                }))
                .build();
    }

    /** Adds the served-by and set-cookie headers, the payment-id, receipt-bin and authorization trailers to answers. */
    static ServerInterceptor decorations() {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                    ServerCallHandler<Q, R> next) {
                return next.startCall(new io.grpc.ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void sendHeaders(Metadata h) {
                        h.put(SERVED_BY, "node-1");
                        h.put(SET_COOKIE, "session=first-caller");
                        super.sendHeaders(h);
                    }

                    @Override
                    public void close(Status status, Metadata trailers) {
                        if (status.isOk()) {
                            trailers.put(PAYMENT_ID, "pay-" + System.nanoTime());
                            trailers.put(RECEIPT, new byte[] {0, 1, (byte) 0xff, 10});
                            trailers.put(AUTHORIZATION, "Bearer refreshed-for-first-caller");
                        }
                        super.close(status, trailers);
                    }
                }, headers);
            }
        };
    }

    /** The application's authentication: the caller named by {@code x-caller}, none without it. */
    static ServerInterceptor authentication() {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                    ServerCallHandler<Q, R> next) {
                String caller = headers.get(CALLER_HEADER);
                if (caller == null) {
                    return next.startCall(call, headers);
                }
                return Contexts.interceptCall(Context.current().withValue(CALLER, caller), call, headers, next);
            }
        };
    }

    static final class BytesMarshaller implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    static final class WriteOnlyMarshaller implements MethodDescriptor.Marshaller<Struct> {
        @Override
        public InputStream stream(Struct value) {
            return new ByteArrayInputStream(value.toByteArray());
        }

        @Override
        public Struct parse(InputStream stream) {
            throw new UnsupportedOperationException("this marshaller only writes");
        }
    }
}
