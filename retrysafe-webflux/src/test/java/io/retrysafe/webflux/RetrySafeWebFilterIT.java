package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.OperationPolicy;
import io.retrysafe.http.HttpRoute;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * The WebFlux filter on a real Reactor Netty server on a random port, asked by a real HTTP client: the
 * servlet filter's answers (400, replay, 422, 409, 413, 401), one run for many concurrent duplicates,
 * a cancelled exchange that stores nothing, and keys scoped per caller.
 */
class RetrySafeWebFilterIT {
    private static final int MAX_REQUEST_BYTES = 1024;
    private static final int MAX_RESPONSE_BYTES = 4096;
    private static final Duration BOUND = Duration.ofSeconds(30);
    /** Runs of the payment handler, per test id. */
    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    /** A slow payment waits for its test to release it; its start is counted down first. */
    private static final Map<String, CompletableFuture<Void>> RELEASE = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> STARTED = new ConcurrentHashMap<>();
    /** Slow payments whose subscription was cancelled (the client went away). */
    private static final Map<String, CountDownLatch> CANCELLED = new ConcurrentHashMap<>();

    /** The {@code uri} of Spring's observation of each exchange, per test id, in the order they ended. */
    private static final Map<String, List<String>> OBSERVED_URIS = new ConcurrentHashMap<>();

    private static DisposableServer server;
    private static HttpClient http;

    private String testId;
    private String key;

    @BeforeAll
    static void start() {
        AsyncRetrySafe engine = AsyncRetrySafe.builder(new InMemoryIdempotencyStore().async()).name("webflux-it")
                .build();
        WebFluxIdempotency config = WebFluxIdempotency.custom()
                .route(HttpRoute.of("POST", "/payments").build())
                .route(HttpRoute.of("POST", "/waiting/payments")
                        .policy(OperationPolicy.custom().waitForResult(BOUND).build()).build())
                .route(HttpRoute.of("POST", "/slow").build())
                .route(HttpRoute.of("POST", "/optional").keyRequired(false).build())
                .route(HttpRoute.of("POST", "/transfers").fingerprintHeaders("X-Account").build())
                .route(HttpRoute.of("POST", "/forms").build())
                .route(HttpRoute.of("POST", "/uploads").build())
                // A body past the bound reaches the client before its outcome is stored: a retry sent at once
                // waits for it, instead of getting 409 while it is stored.
                .route(HttpRoute.of("POST", "/reports")
                        .policy(OperationPolicy.custom().waitForResult(BOUND).build()).build())
                .scope(ReactiveScopeResolver.principal())
                .maxRequestBytes(MAX_REQUEST_BYTES)
                .maxResponseBytes(MAX_RESPONSE_BYTES)
                .build();
        RouterFunction<ServerResponse> routes = RouterFunctions.route()
                .POST("/payments", RetrySafeWebFilterIT::pay)
                .POST("/waiting/payments", RetrySafeWebFilterIT::pay)
                .POST("/optional", RetrySafeWebFilterIT::pay)
                .POST("/transfers", RetrySafeWebFilterIT::pay)
                // The handlers read the form and the parts the filter fingerprinted, as the client sent them.
                .POST("/forms", request -> request.formData().flatMap(form -> ran(request,
                        "{\"amount\":\"" + form.getFirst("amount") + "\"}")))
                .POST("/uploads", request -> request.multipartData().flatMap(parts -> ran(request,
                        "{\"parts\":\"" + String.join(",", new java.util.TreeSet<>(parts.keySet())) + "\"}")))
                // X-Size bytes of body, in buffers of X-Chunk bytes (one buffer without it).
                .POST("/reports", request -> {
                    int run = RUNS.computeIfAbsent(request.headers().firstHeader("X-Test"), i -> new AtomicInteger())
                            .incrementAndGet();
                    int size = Integer.parseInt(request.headers().firstHeader("X-Size"));
                    String chunk = request.headers().firstHeader("X-Chunk");
                    ServerResponse.BodyBuilder created = ServerResponse.status(HttpStatus.CREATED)
                            .header("Location", "/reports/" + run).header("Content-Type", "text/plain");
                    if (chunk == null) {
                        return created.bodyValue("r".repeat(size));
                    }
                    int step = Integer.parseInt(chunk);
                    return created.body(BodyInserters.fromDataBuffers(Flux.range(0, (size + step - 1) / step)
                            .map(i -> DefaultDataBufferFactory.sharedInstance.wrap(
                                    "r".repeat(Math.min(step, size - i * step)).getBytes(UTF_8)))));
                })
                .POST("/slow", request -> {
                    String id = request.headers().firstHeader("X-Test");
                    STARTED.computeIfAbsent(id, i -> new CountDownLatch(1)).countDown();
                    RUNS.computeIfAbsent(id, i -> new AtomicInteger()).incrementAndGet();
                    return Mono.fromFuture(RELEASE.computeIfAbsent(id, i -> new CompletableFuture<>()), true)
                            .doOnCancel(() -> CANCELLED.computeIfAbsent(id, i -> new CountDownLatch(1)).countDown())
                            .then(ServerResponse.status(HttpStatus.CREATED).bodyValue("slow done"));
                })
                .build();
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new ObservationHandler<ServerRequestObservationContext>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return context instanceof ServerRequestObservationContext;
            }

            @Override
            public void onStop(ServerRequestObservationContext context) {
                String id = context.getCarrier().getHeaders().getFirst("X-Test");
                KeyValue uri = context.getLowCardinalityKeyValue("uri");
                if (id != null) {
                    OBSERVED_URIS.computeIfAbsent(id, i -> new CopyOnWriteArrayList<>())
                            .add(uri == null ? "none" : uri.getValue());
                }
            }
        });
        server = TestServer.start(routes, new RetrySafeWebFilter(config, engine), observations);
        http = TestServer.client();
    }

    @AfterAll
    static void stop() {
        RELEASE.values().forEach(f -> f.complete(null));
        if (server != null) {
            server.disposeNow();
        }
    }

    @BeforeEach
    void newIds() {
        testId = UUID.randomUUID().toString();
        key = "key-" + testId;
    }

    private static Mono<ServerResponse> pay(org.springframework.web.reactive.function.server.ServerRequest request) {
        String id = request.headers().firstHeader("X-Test");
        return request.bodyToMono(String.class).defaultIfEmpty("").flatMap(body -> {
            int run = RUNS.computeIfAbsent(id, i -> new AtomicInteger()).incrementAndGet();
            String receipt = "{\"payment\":\"" + UUID.randomUUID() + "\",\"run\":" + run + ",\"bytes\":"
                    + body.length() + "}";
            return ServerResponse.status(HttpStatus.CREATED).header("Location", "/payments/" + run)
                    .header("Set-Cookie", "session=secret").header("Content-Type", "application/json")
                    .bodyValue(receipt);
        });
    }

    /** A run of the form and upload handlers: counted, and answered with what it read and its run number. */
    private static Mono<ServerResponse> ran(org.springframework.web.reactive.function.server.ServerRequest request,
            String read) {
        int run = RUNS.computeIfAbsent(request.headers().firstHeader("X-Test"), i -> new AtomicInteger())
                .incrementAndGet();
        return ServerResponse.status(HttpStatus.CREATED).header("Content-Type", "application/json")
                .bodyValue("{\"read\":" + read + ",\"run\":" + run + "}");
    }

    private int runs() {
        return RUNS.computeIfAbsent(testId, i -> new AtomicInteger()).get();
    }

    private HttpRequest.Builder post(String path, String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).timeout(BOUND)
                .header("X-Test", testId).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
    }

    private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> pay(String user, String body) throws Exception {
        return send(post("/payments", body).header("X-User", user).header("Idempotency-Key", key));
    }

    /**
     * Spring's own observation of each exchange, {@code http.server.requests}: a replay and a refusal, answered by
     * the filter before a handler was matched, carry their route as the first request does, not
     * {@code uri="UNKNOWN"}, without the starter; a request the filter does not protect keeps Spring's tag.
     */
    @Test
    void aReplayAndARefusalAreTaggedWithTheirRouteInSpringsHttpObservation() throws Exception {
        assertThat(pay("alice", "{\"amount\":12}").statusCode()).isEqualTo(201);
        assertThat(pay("alice", "{\"amount\":12}").headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(pay("alice", "{\"amount\":13}").statusCode()).isEqualTo(422);
        assertThat(send(post("/payments", "{}").header("X-User", "alice")).statusCode()).isEqualTo(400);
        assertThat(send(post("/nowhere", "{}").header("X-User", "alice")).statusCode()).isEqualTo(404);

        // An observation ends with its exchange, which may be just after the client has read the answer.
        await().atMost(BOUND).until(() -> OBSERVED_URIS.getOrDefault(testId, List.of()).size() >= 5);
        assertThat(OBSERVED_URIS.get(testId)).containsExactlyInAnyOrder("/payments", "/payments", "/payments",
                "/payments", "NOT_FOUND");
    }

    /**
     * Refused on its head alone (no key, or a declared length over the bound), before its body arrived: the answer
     * says the connection closes, and it does, rather than the server reading a body nobody wants (any length the
     * client declared) before the connection's next request.
     */
    @Test
    void aRequestRefusedBeforeItsBodyArrivedIsAnsweredWithConnectionClose() throws Exception {
        String noKey = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\n"
                + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n";
        String tooLarge = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\nIdempotency-Key: "
                + UUID.randomUUID() + "\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n";

        assertThat(untilClosed(noKey)).startsWith("HTTP/1.1 400 ").containsIgnoringCase("\r\nConnection: close\r\n")
                .contains("\"type\":\"/problems/missing-key\"");
        assertThat(untilClosed(tooLarge)).startsWith("HTTP/1.1 413 ")
                .containsIgnoringCase("\r\nConnection: close\r\n");
    }

    /**
     * Refused on its head (no key), answered at once, the body still arriving: the server reads it off the
     * connection before it closes. Closed with bytes waiting, a connection is reset, not closed, and the reset
     * discards what the client had not read yet of the answer (before, a third of such clients lost it).
     */
    @Test
    void aRefusedBodyStillArrivingAfterTheAnswerDoesNotCostTheClientItsAnswer() throws Exception {
        byte[] body = new byte[64 * 1024];
        Arrays.fill(body, (byte) ' ');
        String head = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\n"
                + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n";
        for (int i = 0; i < 20; i++) {
            String answer;
            try (Socket socket = new Socket("127.0.0.1", server.port())) {
                socket.setSoTimeout(30_000);
                socket.getOutputStream().write(head.getBytes(UTF_8));
                String statusLine = new String(socket.getInputStream().readNBytes(13), UTF_8);
                socket.getOutputStream().write(body);
                answer = statusLine + new String(socket.getInputStream().readAllBytes(), UTF_8);
            }

            assertThat(answer).as("answer %d", i).startsWith("HTTP/1.1 400 ")
                    .containsIgnoringCase("\r\nConnection: close\r\n").contains("\"type\":\"/problems/missing-key\"");
        }
    }

    /**
     * A client that asked to be told before it sends its body ({@code Expect: 100-continue}) and is refused sends
     * none: the refusal is the only answer it gets, never a {@code 100 Continue} after it (which the lingering's read
     * of the body would ask the server for).
     */
    @Test
    void aRefusedRequestThatExpectsToContinueGetsTheRefusalAlone() throws Exception {
        String head = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\nExpect: 100-continue\r\n"
                + "Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n";

        String answer = untilClosed(head);

        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("\"type\":\"/problems/missing-key\"")
                .doesNotContain("100 Continue");
        assertThat(answer.indexOf("HTTP/1.1", 1)).as("one answer only").isEqualTo(-1);
    }

    /** What the server sends on a connection of its own after {@code head}, until it closes it (30 s at most). */
    private String untilClosed(String head) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(head.getBytes(UTF_8));
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), UTF_8);
        }
    }

    @Test
    void aMissingKeyIsRefusedWith400AndTheHandlerDoesNotRun() throws Exception {
        HttpResponse<String> response = send(post("/payments", "{}").header("X-User", "alice"));

        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/missing-key\"").contains("\"rule\":\"missing\"");
        assertThat(runs()).isZero();
    }

    @Test
    void aMalformedKeyIsRefusedWith400() throws Exception {
        HttpResponse<String> response = send(post("/payments", "{}").header("X-User", "alice")
                .header("Idempotency-Key", "a".repeat(300)));

        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(response.body()).contains("\"type\":\"/problems/invalid-key\"");
        assertThat(runs()).isZero();
    }

    @Test
    void withoutAKeyAnOptionalRouteRunsUnprotected() throws Exception {
        assertThat(send(post("/optional", "{}").header("X-User", "alice")).statusCode()).isEqualTo(201);
        assertThat(send(post("/optional", "{}").header("X-User", "alice")).statusCode()).isEqualTo(201);
        assertThat(runs()).isEqualTo(2);
    }

    @Test
    void aRetryIsReplayedWithItsHeadersButNeverACookie() throws Exception {
        HttpResponse<String> first = pay("alice", "{\"amount\":100,\"currency\":\"EUR\"}");
        HttpResponse<String> retry = pay("alice", "{\"amount\":100,\"currency\":\"EUR\"}");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(retry.headers().firstValue("Set-Cookie")).as("credentials are never stored").isEmpty();
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void reorderedJsonIsTheSameRequestAndIsReplayed() throws Exception {
        HttpResponse<String> first = pay("alice", "{\"amount\":100,\"currency\":\"EUR\"}");
        HttpResponse<String> reordered = pay("alice", "{ \"currency\" : \"EUR\", \"amount\" : 100 }");

        assertThat(reordered.statusCode()).isEqualTo(201);
        assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reordered.body()).isEqualTo(first.body());
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherBodyIsRefusedWith422() throws Exception {
        pay("alice", "{\"amount\":100}");
        HttpResponse<String> other = pay("alice", "{\"amount\":999}");

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherValueOfAFingerprintedHeaderIsRefusedWith422() throws Exception {
        HttpResponse<String> first = send(post("/transfers", "{\"amount\":100}").header("X-User", "alice")
                .header("Idempotency-Key", key).header("X-Account", "acc-1"));
        HttpResponse<String> retry = send(post("/transfers", "{\"amount\":100}").header("X-User", "alice")
                .header("Idempotency-Key", key).header("X-Account", "acc-1"));
        HttpResponse<String> otherAccount = send(post("/transfers", "{\"amount\":100}").header("X-User", "alice")
                .header("Idempotency-Key", key).header("X-Account", "acc-2"));
        HttpResponse<String> noAccount = send(post("/transfers", "{\"amount\":100}").header("X-User", "alice")
                .header("Idempotency-Key", key));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(otherAccount.statusCode()).isEqualTo(422);
        assertThat(otherAccount.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(noAccount.statusCode()).as("an absent header counts too").isEqualTo(422);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void malformedJsonIsRefusedWith400() throws Exception {
        HttpResponse<String> response = pay("alice", "{\"amount\":");

        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(response.body()).contains("\"type\":\"/problems/malformed-json\"");
        assertThat(runs()).isZero();
    }

    @Test
    void aDuplicateWhileTheFirstRunsIsRefusedWith409AndRetryAfter() throws Exception {
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(post("/slow", "{}").header("X-User", "alice")
                .header("Idempotency-Key", key).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(STARTED.computeIfAbsent(testId, i -> new CountDownLatch(1)).await(BOUND.toSeconds(), SECONDS))
                .isTrue();

        HttpResponse<String> duplicate = send(post("/slow", "{}").header("X-User", "alice")
                .header("Idempotency-Key", key));
        RELEASE.computeIfAbsent(testId, i -> new CompletableFuture<>()).complete(null);

        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(duplicate.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(first.get().statusCode()).isEqualTo(201);
        assertThat(first.get().body()).isEqualTo("slow done");
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aBodyOverTheBoundIsRefusedWith413WithoutRunning() throws Exception {
        HttpResponse<String> declared = pay("alice", "{\"pad\":\"" + "x".repeat(MAX_REQUEST_BYTES) + "\"}");
        HttpResponse<String> chunked = send(post("/payments", "")
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(
                        ("{\"pad\":\"" + "x".repeat(MAX_REQUEST_BYTES) + "\"}").getBytes(UTF_8))))
                .header("X-User", "alice").header("Idempotency-Key", key + "-chunked"));

        assertThat(declared.statusCode()).isEqualTo(413);
        assertThat(declared.body()).contains("\"type\":\"/problems/request-too-large\"");
        assertThat(chunked.statusCode()).as("no Content-Length: refused as the body passes the bound").isEqualTo(413);
        assertThat(runs()).isZero();
    }

    @Test
    void manyConcurrentDuplicatesRunTheHandlerOnceAndAllGetTheSameAnswer() throws Exception {
        int clients = 64;
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            answers.add(http.sendAsync(post("/waiting/payments", "{\"amount\":100}").header("X-User", "alice")
                    .header("Idempotency-Key", key).build(), HttpResponse.BodyHandlers.ofString()));
        }
        CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(BOUND.toSeconds(), SECONDS);

        assertThat(runs()).isEqualTo(1);
        HttpResponse<String> one = answers.get(0).get();
        assertThat(one.statusCode()).isEqualTo(201);
        for (CompletableFuture<HttpResponse<String>> answer : answers) {
            assertThat(answer.get().statusCode()).isEqualTo(201);
            assertThat(answer.get().body()).isEqualTo(one.body());
        }
        assertThat(answers).filteredOn(a -> a.join().headers().firstValue("Idempotent-Replayed").isEmpty())
                .as("exactly one answer is the handler's own").hasSize(1);
    }

    @Test
    void aCancelledExchangeStoresNothingAndItsKeyIsReleased() throws Exception {
        String body = "{}";
        TestServer.hangUpWhileRunning(server, "/slow", testId, key, body,
                STARTED.computeIfAbsent(testId, i -> new CountDownLatch(1)), BOUND);
        // The client went away while the handler ran: the server cancels the exchange, and the handler with it.
        assertThat(CANCELLED.computeIfAbsent(testId, i -> new CountDownLatch(1)).await(BOUND.toSeconds(), SECONDS))
                .as("the handler's subscription was cancelled").isTrue();
        RELEASE.computeIfAbsent(testId, i -> new CompletableFuture<>()).complete(null);

        await().atMost(BOUND).untilAsserted(() -> {
            HttpResponse<String> retry = send(post("/slow", body).header("X-User", "alice")
                    .header("Idempotency-Key", key));
            assertThat(retry.statusCode()).as("the retry runs, as the key was released").isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        });
        assertThat(runs()).isEqualTo(2);
    }

    @Test
    void keysAreScopedPerCaller() throws Exception {
        HttpResponse<String> alice = pay("alice", "{\"amount\":100}");
        HttpResponse<String> bob = pay("bob", "{\"amount\":100}");
        HttpResponse<String> bobOther = pay("bob", "{\"amount\":5}");

        assertThat(alice.statusCode()).isEqualTo(201);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).as("bob's key is not alice's").isEmpty();
        assertThat(bob.body()).isNotEqualTo(alice.body());
        assertThat(bobOther.statusCode()).isEqualTo(422);
        assertThat(runs()).isEqualTo(2);
    }

    @Test
    void aRequestWithoutACallerIsRefusedWith401() throws Exception {
        HttpResponse<String> response = send(post("/payments", "{}").header("Idempotency-Key", key));

        assertThat(response.statusCode()).isEqualTo(401);
        assertThat(response.body()).contains("\"type\":\"/problems/unauthenticated\"");
        assertThat(runs()).isZero();
    }

    @Test
    void anAnonymousCallerIsNoCallerAndIsRefusedWith401() throws Exception {
        // Anonymous callers all have the one name "anonymousUser": their keys must not be one another's.
        HttpResponse<String> first = send(post("/payments", "{}").header("X-Anonymous", "true")
                .header("Idempotency-Key", key));
        HttpResponse<String> other = send(post("/payments", "{}").header("X-Anonymous", "true")
                .header("Idempotency-Key", key));

        assertThat(first.statusCode()).isEqualTo(401);
        assertThat(first.body()).contains("\"type\":\"/problems/unauthenticated\"");
        assertThat(other.statusCode()).isEqualTo(401);
        assertThat(other.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(runs()).isZero();
    }

    private HttpResponse<String> form(String body) throws Exception {
        return send(post("/forms", body).setHeader("Content-Type", "application/x-www-form-urlencoded")
                .header("X-User", "alice").header("Idempotency-Key", key));
    }

    @Test
    void aFormWithItsFieldsReorderedOrEncodedOtherwiseIsTheSameRequestAndIsReplayed() throws Exception {
        HttpResponse<String> first = form("amount=100&currency=EUR&note=for+rent");
        HttpResponse<String> reordered = form("note=for%20rent&currency=%45UR&amount=100");
        HttpResponse<String> other = form("amount=999&currency=EUR&note=for+rent");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).as("the handler read the form").contains("\"amount\":\"100\"");
        assertThat(reordered.statusCode()).isEqualTo(201);
        assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reordered.body()).isEqualTo(first.body());
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aFormThatCannotBeParsedIsRefusedWith400WithoutRunning() throws Exception {
        HttpResponse<String> badEscape = form("amount=%zz");
        HttpResponse<String> badCharset = send(post("/forms", "amount=1")
                .setHeader("Content-Type", "application/x-www-form-urlencoded; charset=no-such-charset")
                .header("X-User", "alice").header("Idempotency-Key", key));

        assertThat(badEscape.statusCode()).isEqualTo(400);
        assertThat(badEscape.body()).contains("\"type\":\"/problems/malformed-form\"");
        assertThat(badCharset.statusCode()).isEqualTo(400);
        assertThat(badCharset.body()).contains("\"type\":\"/problems/malformed-form\"");
        assertThat(runs()).isZero();
    }

    private HttpResponse<String> upload(String boundary, String... parts) throws Exception {
        StringBuilder body = new StringBuilder();
        for (String part : parts) {
            body.append("--").append(boundary).append("\r\n").append(part).append("\r\n");
        }
        body.append("--").append(boundary).append("--\r\n");
        return send(post("/uploads", body.toString()).setHeader("Content-Type", "multipart/form-data; boundary=" + boundary)
                .header("X-User", "alice").header("Idempotency-Key", key));
    }

    @Test
    void anUploadWithANewBoundaryAndItsPartsReorderedIsReplayedAndAnotherFileIsRefused() throws Exception {
        String note = "Content-Disposition: form-data; name=\"note\"\r\n\r\nmonthly";
        String file = "Content-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n"
                + "Content-Type: text/csv\r\n\r\nid,amount\r\n1,100";
        HttpResponse<String> first = upload("boundary-one", note, file);
        HttpResponse<String> retry = upload("another-boundary", file, note);
        HttpResponse<String> otherFile = upload("boundary-one", note, file.replace("1,100", "1,999"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).as("the handler read the parts").contains("\"parts\":\"file,note\"");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(otherFile.statusCode()).isEqualTo(422);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aMultipartBodyThatCannotBeParsedIsRefusedWith400WithoutRunning() throws Exception {
        HttpResponse<String> response = send(post("/uploads", "--b\r\nno headers and no end")
                .setHeader("Content-Type", "multipart/form-data; boundary=b").header("X-User", "alice")
                .header("Idempotency-Key", key));

        assertThat(response.statusCode()).isEqualTo(400);
        assertThat(response.body()).contains("\"type\":\"/problems/malformed-form\"");
        assertThat(runs()).isZero();
    }

    private HttpResponse<String> report(int size, String chunk) throws Exception {
        HttpRequest.Builder request = post("/reports", "{}").header("X-User", "alice").header("Idempotency-Key", key)
                .header("X-Size", Integer.toString(size));
        return send(chunk == null ? request : request.header("X-Chunk", chunk));
    }

    @Test
    void aBodyOverTheResponseBoundIsSentWholeAsWrittenAndStoredWithoutIt() throws Exception {
        int size = MAX_RESPONSE_BYTES * 5 + 17;
        HttpResponse<String> first = report(size, "1000");
        HttpResponse<String> retry = report(size, "1000");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).as("every byte reaches the client").isEqualTo("r".repeat(size));
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Integer.toString(size));
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue("Content-Type")).as("no body, so no body's type").isEmpty();
        assertThat(retry.body()).isEmpty();
        assertThat(runs()).as("the handler ran, and does not run again").isEqualTo(1);
    }

    @Test
    void aBodyWrittenAsOneBufferOverTheBoundIsSentWholeToo() throws Exception {
        int size = MAX_RESPONSE_BYTES * 3;
        HttpResponse<String> first = report(size, null);
        HttpResponse<String> retry = report(size, null);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo("r".repeat(size));
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Integer.toString(size));
        assertThat(retry.body()).isEmpty();
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aBodyOfExactlyTheBoundIsHeldAndReplayedWhole() throws Exception {
        HttpResponse<String> first = report(MAX_RESPONSE_BYTES, "1000");
        HttpResponse<String> retry = report(MAX_RESPONSE_BYTES, "1000");

        assertThat(first.body()).isEqualTo("r".repeat(MAX_RESPONSE_BYTES));
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Idempotent-Replay-Body-Omitted")).isEmpty();
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(runs()).isEqualTo(1);
    }
}
