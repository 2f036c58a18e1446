package io.retrysafe.grpc;

import static io.retrysafe.grpc.PaymentsService.PAY;
import static io.retrysafe.grpc.PaymentsService.request;
import static io.retrysafe.grpc.PaymentsService.runs;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.Struct;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.ForwardingServerCall;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One key per call, the same on every attempt grpc-java's retry policy makes, over the in-process transport. */
class RetrySafeClientInterceptorTest {
    /** The key of each attempt that reached the server, in order. */
    private static final List<String> ATTEMPTS = new CopyOnWriteArrayList<>();
    /** The status of each attempt the server answered, in order. */
    private static final List<Status.Code> ANSWERS = new CopyOnWriteArrayList<>();
    /** Counted down when the server refuses an attempt with ABORTED. */
    private static volatile CountDownLatch aborted;
    private static Server server;
    private static ManagedChannel channel;
    /** Retries ABORTED too, after a backoff far shorter than the server's retry delay. */
    private static ManagedChannel abortedRetrying;
    private String ref;

    @BeforeAll
    static void start() throws Exception {
        ServerInterceptor recordKeys = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                    ServerCallHandler<Q, R> next) {
                ATTEMPTS.add(headers.get(GrpcIdempotency.KEY_HEADER));
                return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void close(Status status, Metadata trailers) {
                        ANSWERS.add(status.getCode());
                        if (status.getCode() == Status.Code.ABORTED) {
                            aborted.countDown();
                        }
                        super.close(status, trailers);
                    }
                }, headers);
            }
        };
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).name("grpc-client-test").build();
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name)
                .addService(ServerInterceptors.intercept(PaymentsService.definition(),
                        new RetrySafeServerInterceptor(TestServer.CONFIG, engine), PaymentsService.authentication(),
                        recordKeys))
                .build().start();
        Metadata caller = new Metadata();
        caller.put(PaymentsService.CALLER_HEADER, "alice");
        channel = InProcessChannelBuilder.forName(name)
                .defaultServiceConfig(serviceConfig(4, List.of("UNAVAILABLE")))
                .enableRetry()
                .intercept(RetrySafeClientInterceptor.methods(PAY.getFullMethodName()),
                        MetadataUtils.newAttachHeadersInterceptor(caller))
                .build();
        abortedRetrying = InProcessChannelBuilder.forName(name)
                .defaultServiceConfig(serviceConfig(5, List.of("UNAVAILABLE", "ABORTED")))
                .enableRetry()
                .intercept(RetrySafeClientInterceptor.methods(PAY.getFullMethodName()),
                        MetadataUtils.newAttachHeadersInterceptor(caller))
                .build();
    }

    private static Map<String, Object> serviceConfig(int maxAttempts, List<String> retryable) {
        Map<String, Object> retryPolicy = Map.of("maxAttempts", (double) maxAttempts, "initialBackoff", "0.01s",
                "maxBackoff", "0.05s", "backoffMultiplier", 2.0, "retryableStatusCodes", retryable);
        return Map.of("methodConfig", List.of(Map.of(
                "name", List.of(Map.of("service", PaymentsService.SERVICE, "method", "Pay")),
                "retryPolicy", retryPolicy)));
    }

    @AfterAll
    static void stop() throws Exception {
        abortedRetrying.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }

    @BeforeEach
    void newIntent() {
        ref = "ref-" + UUID.randomUUID();
        ATTEMPTS.clear();
        ANSWERS.clear();
        aborted = new CountDownLatch(1);
    }

    @Test
    void theRetryPolicysAttemptsCarryTheCallsOneKey() {
        Struct reply = ClientCalls.blockingUnaryCall(channel, PAY, CallOptions.DEFAULT, request(ref, 5, "unavailable-twice"));

        assertThat(reply.getFieldsOrThrow("run").getNumberValue()).isEqualTo(3);
        assertThat(ATTEMPTS).hasSize(3).doesNotContainNull();
        assertThat(ATTEMPTS).containsOnly(ATTEMPTS.get(0));
        assertThat(runs(ref)).isEqualTo(3);
    }

    @Test
    void eachCallIsANewIntentWithANewKey() {
        ClientCalls.blockingUnaryCall(channel, PAY, CallOptions.DEFAULT, request(ref, 5, "ok"));
        ClientCalls.blockingUnaryCall(channel, PAY, CallOptions.DEFAULT, request(ref, 5, "ok"));

        assertThat(ATTEMPTS).hasSize(2).doesNotHaveDuplicates().doesNotContainNull();
        assertThat(runs(ref)).isEqualTo(2);
    }

    @Test
    void aKeyNamedInTheCallOptionsIsKeptAcrossTheApplicationsOwnRetries() {
        CallOptions options = CallOptions.DEFAULT.withOption(RetrySafeClientInterceptor.KEY, "order-" + ref);

        Struct first = ClientCalls.blockingUnaryCall(channel, PAY, options, request(ref, 5, "ok"));
        Struct again = ClientCalls.blockingUnaryCall(channel, PAY, options, request(ref, 5, "ok"));

        assertThat(again).isEqualTo(first);
        assertThat(ATTEMPTS).containsExactly("order-" + ref, "order-" + ref);
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void otherMethodsAreNotKeyed() {
        ClientCalls.blockingUnaryCall(channel, PaymentsService.QUOTE, CallOptions.DEFAULT, request(ref, 5, "ok"));

        assertThat(ATTEMPTS).containsExactly((String) null);
    }

    @Test
    void aClientWhosePolicyRetriesAbortedWaitsTheServersDelayAndGetsTheFirstCallsAnswer() throws Exception {
        CallOptions options = CallOptions.DEFAULT.withOption(RetrySafeClientInterceptor.KEY, "order-" + ref);
        PaymentsService.gate(ref);
        ListenableFuture<Struct> first = ClientCalls.futureUnaryCall(channel.newCall(PAY, options),
                request(ref, 5, "wait"));
        assertThat(PaymentsService.entered(ref)).isTrue();

        ListenableFuture<Struct> duplicate = ClientCalls.futureUnaryCall(abortedRetrying.newCall(PAY, options),
                request(ref, 5, "wait"));
        try {
            // The duplicate's first attempt is refused while the first call runs; only then does the first finish.
            // Without the server's pushback the client would spend its attempts within its 10 ms backoff.
            assertThat(aborted.await(30, TimeUnit.SECONDS)).isTrue();
        } finally {
            PaymentsService.open(ref);
        }

        assertThat(duplicate.get(30, TimeUnit.SECONDS)).isEqualTo(first.get(30, TimeUnit.SECONDS));
        assertThat(ATTEMPTS).containsOnly("order-" + ref).hasSize(3);
        assertThat(ANSWERS).containsExactly(Status.Code.ABORTED, Status.Code.OK, Status.Code.OK);
        assertThat(runs(ref)).isEqualTo(1);
    }
}
