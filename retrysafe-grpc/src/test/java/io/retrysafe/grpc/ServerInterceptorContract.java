package io.retrysafe.grpc;

import static io.retrysafe.grpc.PaymentsService.PAY;
import static io.retrysafe.grpc.PaymentsService.PAY_RAW;
import static io.retrysafe.grpc.PaymentsService.PAYMENT_ID;
import static io.retrysafe.grpc.PaymentsService.QUOTE;
import static io.retrysafe.grpc.PaymentsService.RECEIPT;
import static io.retrysafe.grpc.PaymentsService.SERVED_BY;
import static io.retrysafe.grpc.PaymentsService.WATCH;
import static io.retrysafe.grpc.PaymentsService.request;
import static io.retrysafe.grpc.PaymentsService.runs;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.rpc.RetryInfo;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import io.retrysafe.RetrySafe;
import io.retrysafe.grpc.TestServer.Reply;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** What a client of a protected service observes; each subclass names the transport and the store. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ServerInterceptorContract {
    static final String ALICE = "alice";
    static final String BOB = "bob";

    private final TestServer.Transport transport;
    private final Supplier<RetrySafe> engine;
    private TestServer server;
    /** Unique per test: the service counts runs by it. */
    String ref;
    String key;

    ServerInterceptorContract(TestServer.Transport transport, Supplier<RetrySafe> engine) {
        this.transport = transport;
        this.engine = engine;
    }

    @BeforeAll
    void start() throws Exception {
        server = TestServer.start(transport, engine.get());
    }

    @AfterAll
    void stop() throws Exception {
        server.close();
    }

    TestServer server() {
        return server;
    }

    @BeforeEach
    void newIntent() {
        ref = "ref-" + UUID.randomUUID();
        key = "key-" + UUID.randomUUID();
    }

    @Test
    void aRetryIsAnsweredWithTheStoredMessageBytesStatusHeadersAndTrailers() {
        Reply<byte[]> first = server().call(PAY_RAW, ALICE, key, request(ref, 100, "ok"));
        Reply<byte[]> retry = server().call(PAY_RAW, ALICE, key, request(ref, 100, "ok"));

        assertThat(first.status().getCode()).isEqualTo(Status.Code.OK);
        assertThat(first.replayed()).isFalse();
        assertThat(retry.status().getCode()).isEqualTo(Status.Code.OK);
        assertThat(retry.replayed()).isTrue();
        assertThat(retry.message()).isEqualTo(first.message()).isNotEmpty();
        assertThat(retry.headers().get(SERVED_BY)).isEqualTo("node-1");
        assertThat(retry.trailers().get(PAYMENT_ID)).isEqualTo(first.trailers().get(PAYMENT_ID)).isNotNull();
        assertThat(retry.trailers().get(RECEIPT)).containsExactly(0, 1, 0xff, 10);
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void credentialsAndSessionStateReachTheFirstCallerOnlyAndAreNeverStored() {
        Reply<Struct> first = server().call(PAY, ALICE, key, request(ref, 100, "ok"));
        Reply<Struct> retry = server().call(PAY, ALICE, key, request(ref, 100, "ok"));

        assertThat(first.headers().get(PaymentsService.SET_COOKIE)).isEqualTo("session=first-caller");
        assertThat(first.trailers().get(PaymentsService.AUTHORIZATION)).isEqualTo("Bearer refreshed-for-first-caller");
        assertThat(retry.replayed()).isTrue();
        assertThat(retry.headers().get(SERVED_BY)).isEqualTo("node-1");
        assertThat(retry.headers().containsKey(PaymentsService.SET_COOKIE)).isFalse();
        assertThat(retry.trailers().containsKey(PaymentsService.AUTHORIZATION)).isFalse();
    }

    @Test
    void aStoredRefusalIsReplayedWithItsStatusDescriptionAndTrailers() {
        Reply<Struct> first = server().call(PAY, ALICE, key, request(ref, 100, "not-found"));
        Reply<Struct> retry = server().call(PAY, ALICE, key, request(ref, 100, "not-found"));

        assertThat(first.status().getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(retry.status().getCode()).isEqualTo(Status.Code.NOT_FOUND);
        assertThat(retry.status().getDescription()).isEqualTo("no account for " + ref);
        assertThat(retry.trailers().get(PAYMENT_ID)).isEqualTo("none-1");
        assertThat(retry.message()).isNull();
        assertThat(retry.replayed()).isTrue();
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void sixteenConcurrentCallsWithOneKeyRunOnceAndTheOthersAreAbortedWithARetryDelay() throws Exception {
        PaymentsService.gate(ref);
        List<CompletableFuture<Reply<Struct>>> calls = new ArrayList<>();
        CountDownLatch answered = new CountDownLatch(15);
        for (int i = 0; i < 16; i++) {
            CompletableFuture<Reply<Struct>> call = server().start(PAY, ALICE, key, request(ref, 100, "wait"), h -> { });
            call.whenComplete((r, e) -> answered.countDown());
            calls.add(call);
        }
        try {
            assertThat(PaymentsService.entered(ref)).isTrue();
            assertThat(answered.await(30, TimeUnit.SECONDS)).as("15 calls answered while one runs").isTrue();
        } finally {
            PaymentsService.open(ref);
        }

        List<Reply<Struct>> replies = calls.stream().map(CompletableFuture::join).toList();
        assertThat(replies).filteredOn(r -> r.status().isOk()).hasSize(1);
        List<Reply<Struct>> aborted = replies.stream().filter(r -> r.status().getCode() == Status.Code.ABORTED).toList();
        assertThat(aborted).hasSize(15);
        for (Reply<Struct> r : aborted) {
            com.google.rpc.Status details = StatusProto.fromStatusAndTrailers(r.status(), r.trailers());
            assertThat(details.getCode()).isEqualTo(Status.Code.ABORTED.value());
            assertThat(details.getDetails(0).unpack(RetryInfo.class).getRetryDelay().getSeconds()).isEqualTo(1);
            assertThat(r.trailers().get(Refusal.PUSHBACK)).isEqualTo("1000");
        }
        assertThat(runs(ref)).isEqualTo(1);
        Reply<Struct> retry = server().call(PAY, ALICE, key, request(ref, 100, "wait"));
        assertThat(retry.replayed()).isTrue();
        assertThat(retry.message()).isEqualTo(replies.stream().filter(r -> r.status().isOk()).findFirst()
                .orElseThrow().message());
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void theSameRequestEncodedInAnotherFieldOrderIsTheSameIntent() throws Exception {
        Struct request = request(ref, 100, "ok");
        List<String> names = new ArrayList<>(request.getFieldsMap().keySet());
        java.util.Collections.reverse(names);
        Struct.Builder b = Struct.newBuilder();
        names.forEach(n -> b.putFields(n, request.getFieldsOrThrow(n)));
        Struct other = b.build();
        assertThat(PAY.streamRequest(other).readAllBytes()).isNotEqualTo(PAY.streamRequest(request).readAllBytes());

        server().call(PAY, ALICE, key, request);
        Reply<Struct> retry = server().call(PAY, ALICE, key, other);

        assertThat(retry.status().isOk()).isTrue();
        assertThat(retry.replayed()).isTrue();
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void aKeyReusedWithAnotherRequestIsFailedPreconditionAndDoesNotRun() {
        server().call(PAY, ALICE, key, request(ref, 100, "ok"));

        Reply<Struct> reused = server().call(PAY, ALICE, key, request(ref, 999, "ok"));

        assertThat(reused.status().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(reused.status().getDescription()).contains("already used with a different request");
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void aKeyIsScopedToItsCaller() {
        server().call(PAY, ALICE, key, request(ref, 100, "ok"));

        Reply<Struct> bobs = server().call(PAY, BOB, key, request(ref, 100, "ok"));

        assertThat(bobs.status().isOk()).isTrue();
        assertThat(bobs.replayed()).isFalse();
        assertThat(runs(ref)).isEqualTo(2);
    }

    @Test
    void aCallWithoutAKeyIsInvalidArgumentWhereTheKeyIsRequiredAndRunsUnprotectedWhereItIsOptional() {
        Reply<Struct> missing = server().call(PAY, ALICE, null, request(ref, 100, "ok"));
        assertThat(missing.status().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(missing.status().getDescription()).contains("missing");
        assertThat(runs(ref)).isZero();

        server().call(QUOTE, ALICE, null, request(ref, 100, "ok"));
        server().call(QUOTE, ALICE, null, request(ref, 100, "ok"));
        assertThat(runs(ref)).isEqualTo(2);
        Reply<Struct> keyed = server().call(QUOTE, ALICE, key, request(ref, 100, "ok"));
        Reply<Struct> retry = server().call(QUOTE, ALICE, key, request(ref, 100, "ok"));
        assertThat(keyed.status().isOk()).isTrue();
        assertThat(retry.replayed()).isTrue();
        assertThat(runs(ref)).isEqualTo(3);
    }

    @Test
    void keysThatBreakTheRulesAreInvalidArgumentAndDoNotRun() {
        assertRefusedKey(h -> h.put(GrpcIdempotency.KEY_HEADER, "k".repeat(256)), "at most 255");
        assertRefusedKey(h -> h.put(GrpcIdempotency.KEY_HEADER, "k".repeat(6000)), "at most 255");
        assertRefusedKey(h -> h.put(GrpcIdempotency.KEY_HEADER, "\"\""), "empty");
        assertRefusedKey(h -> h.put(GrpcIdempotency.KEY_HEADER, "a, b"), "one value");
        assertRefusedKey(h -> {
            h.put(GrpcIdempotency.KEY_HEADER, "a");
            h.put(GrpcIdempotency.KEY_HEADER, "b");
        }, "one value");
        assertRefusedKey(h -> h.put(RetrySafeServerInterceptor.BINARY_KEY_HEADER, key.getBytes()),
                "not as idempotency-key-bin");
        assertRefusedKey(h -> {
            h.put(GrpcIdempotency.KEY_HEADER, key);
            h.put(RetrySafeServerInterceptor.BINARY_KEY_HEADER, new byte[] {0, 10, 13});
        }, "not as idempotency-key-bin");
        assertThat(runs(ref)).isZero();
    }

    @Test
    void aKeyWithControlCharactersNeverRuns() {
        Reply<Struct> r = server().start(PAY, ALICE, null, request(ref, 100, "ok"),
                h -> h.put(GrpcIdempotency.KEY_HEADER, "abc\u0001\r\ndef")).join();

        // Refused by the key rules, or dropped by the transport and then missing: never a key, never run.
        assertThat(r.status().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(runs(ref)).isZero();
    }

    private void assertRefusedKey(java.util.function.Consumer<Metadata> headers, String description) {
        Reply<Struct> r = server().start(PAY, ALICE, null, request(ref, 100, "ok"), headers).join();
        assertThat(r.status().getCode()).as(description).isEqualTo(Status.Code.INVALID_ARGUMENT);
        assertThat(r.status().getDescription()).contains(description);
    }

    @Test
    void aCallWithoutACallerIsUnauthenticatedAndDoesNotRun() {
        Reply<Struct> r = server().call(PAY, null, key, request(ref, 100, "ok"));

        assertThat(r.status().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        assertThat(runs(ref)).isZero();
    }

    @Test
    void aHandlerThatThrowsIsUnknownNothingIsStoredAndTheRetryRunsAgain() {
        Reply<Struct> failed = server().call(PAY, ALICE, key, request(ref, 100, "throw-once"));
        assertThat(failed.status().getCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(runs(ref)).isEqualTo(1);

        Reply<Struct> retry = server().call(PAY, ALICE, key, request(ref, 100, "throw-once"));
        assertThat(retry.status().isOk()).isTrue();
        assertThat(retry.replayed()).isFalse();
        assertThat(runs(ref)).isEqualTo(2);

        Reply<Struct> again = server().call(PAY, ALICE, key, request(ref, 100, "throw-once"));
        assertThat(again.replayed()).isTrue();
        assertThat(again.message()).isEqualTo(retry.message());
        assertThat(runs(ref)).isEqualTo(2);
    }

    @Test
    void anUnavailableAnswerIsNotStoredAndTheRetryRunsAgain() {
        assertThat(server().call(PAY, ALICE, key, request(ref, 1, "unavailable-twice")).status().getCode())
                .isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(server().call(PAY, ALICE, key, request(ref, 1, "unavailable-twice")).status().getCode())
                .isEqualTo(Status.Code.UNAVAILABLE);
        Reply<Struct> third = server().call(PAY, ALICE, key, request(ref, 1, "unavailable-twice"));

        assertThat(third.status().isOk()).isTrue();
        assertThat(third.replayed()).isFalse();
        assertThat(runs(ref)).isEqualTo(3);
    }

    @Test
    void aStoredMessageTheMethodCannotParseAgainIsInternalNotAHang() {
        Reply<byte[]> first = server().call(PaymentsService.RECEIPT_RAW, ALICE, key, request(ref, 1, "ok"));
        Reply<byte[]> retry = server().call(PaymentsService.RECEIPT_RAW, ALICE, key, request(ref, 1, "ok"));

        assertThat(first.status().isOk()).isTrue();
        assertThat(first.message()).isEqualTo(request(ref, 1, "ok").toByteArray());
        assertThat(retry.status().getCode()).isEqualTo(Status.Code.INTERNAL);
        assertThat(retry.status().getDescription()).isEqualTo("the answer could not be sent");
        assertThat(runs(ref)).isEqualTo(1);
    }

    @Test
    void aProtectedStreamingMethodIsUnimplemented() {
        Reply<Struct> r = server().call(WATCH, ALICE, key, request(ref, 1, "ok"));

        assertThat(r.status().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED);
        assertThat(runs(ref)).isZero();
    }
}
