package io.retrysafe.client;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Sleeper;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse.BodyHandlers;
import java.net.http.HttpTimeoutException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The client against a real HTTP server on 127.0.0.1 that answers a scripted sequence. The
 * {@link Sleeper} records the waits and returns at once, so no test waits for a backoff.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RetryingClientIT {
    private static final String V7 = "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";
    private static final String JSON = "{\"amount\":100,\"currency\":\"EUR\"}";
    private static final Instant NOW = Instant.parse("2024-06-30T12:00:00Z");

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final List<Duration> sleeps = new CopyOnWriteArrayList<>();
    private final Sleeper recording = sleeps::add;
    private ScriptedServer server;

    @BeforeEach
    void start() throws IOException {
        server = new ScriptedServer();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpRequest post() {
        return HttpRequest.newBuilder(server.uri("/payments")).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json").POST(BodyPublishers.ofString(JSON)).build();
    }

    private RetryingClient.Builder client() {
        return RetryingClient.builder(http).sleeper(recording);
    }

    // ---- retried answers

    @Test
    void unavailableWithRetryAfterThenCreated() throws Exception {
        server.answer(503, Map.of("Retry-After", "1"), "{\"type\":\"/problems/store-unavailable\"}");
        server.answer(201, Map.of("Location", "/payments/1"), "{\"id\":1}");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.body()).isEqualTo("{\"id\":1}");
        assertThat(response.attempts()).isEqualTo(2);
        assertThat(response.replayed()).isFalse();
        assertThat(response.key()).matches(V7);
        assertThat(server.received()).hasSize(2).allSatisfy(r -> {
            assertThat(r.keys()).as("one Idempotency-Key, the same on every attempt").containsExactly(response.key());
            assertThat(r.method()).isEqualTo("POST");
            assertThat(r.body()).isEqualTo(JSON);
        });
        assertThat(sleeps).singleElement().satisfies(d -> assertThat(d)
                .as("Retry-After is a floor, plus at most the first backoff")
                .isBetween(Duration.ofSeconds(1), Duration.ofMillis(1_100)));
    }

    @Test
    void inProgressTwiceThenReplayed() throws Exception {
        server.answer(409, Map.of("Retry-After", "1"), "{\"type\":\"/problems/request-in-progress\"}");
        server.answer(409, Map.of("Retry-After", "1"), "{\"type\":\"/problems/request-in-progress\"}");
        server.answer(201, Map.of("Idempotent-Replayed", "true"), "{\"id\":1}");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.replayed()).isTrue();
        assertThat(response.attempts()).isEqualTo(3);
        assertThat(server.received()).extracting(Received::keys).containsOnly(List.of(response.key()));
        assertThat(sleeps).hasSize(2);
        assertThat(sleeps.get(0)).isBetween(Duration.ofSeconds(1), Duration.ofMillis(1_100));
        assertThat(sleeps.get(1)).isBetween(Duration.ofSeconds(1), Duration.ofMillis(1_200));
    }

    @Test
    void tooManyRequestsWithAnHttpDate() throws Exception {
        server.answer(429, Map.of("Retry-After", "Sun, 30 Jun 2024 12:00:03 GMT"), "");
        server.answer(201, Map.of(), "{\"id\":1}");

        ClientResponse<String> response = client().clock(Clock.fixed(NOW, ZoneOffset.UTC)).build()
                .send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.attempts()).isEqualTo(2);
        assertThat(sleeps).singleElement().satisfies(d -> assertThat(d)
                .isBetween(Duration.ofSeconds(3), Duration.ofMillis(3_100)));
    }

    @Test
    void retryAfterIsCappedByMaxBackoff() throws Exception {
        server.answer(503, Map.of("Retry-After", "3600"), "");
        server.answer(201, Map.of(), "");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(sleeps).containsExactly(RetryingClient.DEFAULT_MAX_BACKOFF);
    }

    @Test
    void badGatewayAndGatewayTimeoutAreRetried() throws Exception {
        server.answer(502, Map.of(), "");
        server.answer(504, Map.of(), "");
        server.answer(200, Map.of(), "ok");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.attempts()).isEqualTo(3);
    }

    @Test
    void retriesRunOutAndTheLastAnswerIsReturned() throws Exception {
        for (int i = 0; i < 3; i++) {
            server.answer(503, Map.of(), "{\"attempt\":" + (i + 1) + "}");
        }

        ClientResponse<String> response = client().maxAttempts(3).build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.attempts()).isEqualTo(3);
        assertThat(response.body()).as("the last attempt's body, through the caller's handler").isEqualTo("{\"attempt\":3}");
        assertThat(sleeps).hasSize(2);
    }

    // ---- final answers

    @Test
    void keyReusedIsNotRetried() throws Exception {
        server.answer(422, Map.of("Content-Type", "application/problem+json"), "{\"type\":\"/problems/key-reused\"}");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(422);
        assertThat(response.body()).isEqualTo("{\"type\":\"/problems/key-reused\"}");
        assertThat(response.attempts()).isEqualTo(1);
        assertThat(server.received()).hasSize(1);
        assertThat(sleeps).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(ints = {400, 401, 403, 404, 408, 410, 412, 413, 425, 428, 500, 501})
    void finalAnswersAreNotRetried(int status) throws Exception {
        server.answer(status, Map.of(), "");

        ClientResponse<String> response = client().build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(status);
        assertThat(response.attempts()).isEqualTo(1);
        assertThat(server.received()).hasSize(1);
        assertThat(sleeps).isEmpty();
    }

    @Test
    void serverErrorIsRetriedWhenConfigured() throws Exception {
        server.answer(500, Map.of(), "");
        server.answer(201, Map.of(), "");

        ClientResponse<String> response = client().retryStatuses(500, 503).build().send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.attempts()).isEqualTo(2);
    }

    // ---- network failures

    @Test
    void connectionRefusedIsRetriedThenSurfaces() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = socket.getLocalPort();
        }
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + closedPort + "/payments"))
                .timeout(Duration.ofSeconds(5)).POST(BodyPublishers.ofString(JSON)).build();
        RetryingClient client = client().maxAttempts(3).build();

        assertThatThrownBy(() -> client.send(request, BodyHandlers.ofString()))
                .isInstanceOf(ConnectException.class)
                .satisfies(e -> assertThat(e.getSuppressed()).as("the earlier attempts' failures").hasSize(2)
                        .allMatch(s -> s instanceof ConnectException));
        assertThat(sleeps).hasSize(2);
        assertThat(sleeps.get(0)).isBetween(Duration.ZERO, Duration.ofMillis(100));
        assertThat(sleeps.get(1)).isBetween(Duration.ZERO, Duration.ofMillis(200));
    }

    @Test
    void aLostResponseIsRetriedWithTheSameKey() throws Exception {
        server.hang();                                   // the first attempt is never answered
        server.answer(201, Map.of("Idempotent-Replayed", "true"), "{\"id\":1}");
        HttpRequest request = HttpRequest.newBuilder(server.uri("/payments")).timeout(Duration.ofMillis(500))
                .POST(BodyPublishers.ofString(JSON)).build();

        ClientResponse<String> response = client().build().send(request, BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.replayed()).isTrue();
        assertThat(response.attempts()).isEqualTo(2);
        assertThat(server.received()).extracting(Received::keys).containsExactly(List.of(response.key()),
                List.of(response.key()));
    }

    // ---- waits

    @Test
    void jitteredWaitsStayWithinTheirCaps() throws Exception {
        int calls = 6;
        int attempts = 8;
        for (int i = 0; i < calls * attempts; i++) {
            server.answer(503, Map.of(), "");
        }
        RetryingClient client = client().maxAttempts(attempts).initialBackoff(Duration.ofMillis(100))
                .maxBackoff(Duration.ofSeconds(1)).multiplier(2).build();

        for (int i = 0; i < calls; i++) {
            assertThat(client.send(post(), BodyHandlers.discarding()).attempts()).isEqualTo(attempts);
        }

        assertThat(sleeps).hasSize(calls * (attempts - 1));
        int belowHalf = 0;
        int aboveHalf = 0;
        for (int i = 0; i < sleeps.size(); i++) {
            int attempt = i % (attempts - 1) + 1;
            Duration cap = Duration.ofMillis(Math.min(1_000, 100L << (attempt - 1)));
            assertThat(sleeps.get(i)).as("wait after attempt %d", attempt).isBetween(Duration.ZERO, cap);
            if (sleeps.get(i).compareTo(cap.dividedBy(2)) < 0) {
                belowHalf++;
            } else {
                aboveHalf++;
            }
        }
        assertThat(belowHalf).as("full jitter spreads the waits over [0, cap]").isPositive();
        assertThat(aboveHalf).as("full jitter spreads the waits over [0, cap]").isPositive();
    }

    @Test
    void deadlineStopsRetriesBeforeItPasses() throws Exception {
        for (int i = 0; i < 5; i++) {
            server.answer(503, Map.of("Retry-After", "1"), "");
        }
        MovingClock clock = new MovingClock(NOW);
        RetryingClient client = RetryingClient.builder(http).maxAttempts(5).deadline(Duration.ofSeconds(2))
                .clock(clock).sleeper(d -> {
                    sleeps.add(d);
                    clock.advance(d);
                }).build();

        ClientResponse<String> response = client.send(post(), BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.attempts()).as("a second wait of at least 1 s would pass the 2 s deadline").isEqualTo(2);
        assertThat(sleeps).hasSize(1);
    }

    @Test
    void deadlinePassedDuringAWaitSurfacesAsTimeout() {
        server.answer(503, Map.of("Retry-After", "1"), "");
        MovingClock clock = new MovingClock(NOW);
        RetryingClient client = RetryingClient.builder(http).deadline(Duration.ofSeconds(2)).clock(clock)
                .sleeper(d -> clock.advance(d.plusSeconds(5))).build();   // a wait that overslept

        assertThatThrownBy(() -> client.send(post(), BodyHandlers.ofString()))
                .isInstanceOf(HttpTimeoutException.class)
                .hasMessageStartingWith("deadline of PT2S passed before attempt 2 (attempt 1 got status 503, key ");
        assertThat(server.received()).hasSize(1);
    }

    @Test
    void deadlineCutsTheTimeoutOfAnAttempt() {
        server.hang();
        RetryingClient client = client().deadline(Duration.ofMillis(500)).build();
        long started = System.nanoTime();

        assertThatThrownBy(() -> client.send(post(), BodyHandlers.ofString()))   // post() allows 10 s
                .isInstanceOf(HttpTimeoutException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(5));
        assertThat(sleeps).as("no time left for a retry").isEmpty();
    }

    // ---- keys

    @Test
    void eachCallHasItsOwnKey() throws Exception {
        server.answer(201, Map.of(), "");
        server.answer(201, Map.of(), "");
        RetryingClient client = client().build();

        String first = client.send(post(), BodyHandlers.discarding()).key();
        String second = client.send(post(), BodyHandlers.discarding()).key();

        assertThat(first).isNotEqualTo(second);
        assertThat(second).isGreaterThan(first);
        assertThat(server.received()).extracting(Received::keys).containsExactly(List.of(first), List.of(second));
    }

    @Test
    void theCallersKeyIsSentAsIsOrQuoted() throws Exception {
        server.answer(503, Map.of(), "");
        server.answer(201, Map.of(), "");
        server.answer(201, Map.of(), "");
        RetryingClient client = client().build();

        ClientResponse<Void> kept = client.send(post(), "invoice-17:9b2f6c1e3d4a4f8b", BodyHandlers.discarding());
        client.send(post(), "a \"quoted\" key", BodyHandlers.discarding());

        assertThat(kept.key()).isEqualTo("invoice-17:9b2f6c1e3d4a4f8b");
        assertThat(server.received()).extracting(Received::keys).containsExactly(
                List.of("invoice-17:9b2f6c1e3d4a4f8b"), List.of("invoice-17:9b2f6c1e3d4a4f8b"),
                List.of("\"a \\\"quoted\\\" key\""));
    }

    @Test
    void refusesARequestThatAlreadyHasAKeyAndAnInvalidKey() {
        RetryingClient client = client().build();
        HttpRequest withKey = HttpRequest.newBuilder(server.uri("/payments")).header("Idempotency-Key", "k")
                .POST(BodyPublishers.ofString(JSON)).build();

        assertThatThrownBy(() -> client.send(withKey, BodyHandlers.discarding()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must not have an Idempotency-Key header");
        assertThatThrownBy(() -> client.send(post(), "schlüssel", BodyHandlers.discarding()))
                .isInstanceOf(InvalidKeyException.class)
                .hasMessageContaining("printable ASCII");
        assertThatThrownBy(() -> client.send(post(), "", BodyHandlers.discarding()))
                .isInstanceOf(InvalidKeyException.class);
        assertThat(server.received()).isEmpty();
    }

    // ---- configuration and Retry-After parsing

    @Test
    void builderChecksItsArguments() {
        assertThatThrownBy(() -> RetryingClient.builder(http).maxAttempts(3).maxAttempts(4))
                .isInstanceOf(IllegalStateException.class).hasMessage("maxAttempts was already set to 3");
        assertThatThrownBy(() -> RetryingClient.builder(http).maxAttempts(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxAttempts must be between 1 and 100, but was 0");
        assertThatThrownBy(() -> RetryingClient.builder(http).multiplier(0.5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("multiplier must be a finite number of at least 1.0, but was 0.5");
        assertThatThrownBy(() -> RetryingClient.builder(http).initialBackoff(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("initialBackoff must be positive, but was PT0S");
        assertThatThrownBy(() -> RetryingClient.builder(http).retryStatuses(503, 422))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was 422");
        assertThatThrownBy(() -> RetryingClient.builder(http).initialBackoff(Duration.ofSeconds(10)).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("initialBackoff must not exceed maxBackoff, but was initialBackoff=PT10S, maxBackoff=PT5S");

        RetryingClient defaults = RetryingClient.of(http);
        assertThat(defaults.maxAttempts()).isEqualTo(5);
        assertThat(defaults.initialBackoff()).isEqualTo(Duration.ofMillis(100));
        assertThat(defaults.maxBackoff()).isEqualTo(Duration.ofSeconds(5));
        assertThat(defaults.multiplier()).isEqualTo(2.0);
        assertThat(defaults.deadline()).isEmpty();
        assertThat(defaults.retryStatuses()).containsExactly(409, 429, 502, 503, 504);
    }

    @Test
    void parsesEveryRetryAfterForm() {
        assertThat(RetryingClient.retryAfter("120", NOW)).isEqualTo(Duration.ofSeconds(120));
        assertThat(RetryingClient.retryAfter(" 0 ", NOW)).isEqualTo(Duration.ZERO);
        assertThat(RetryingClient.retryAfter("Sun, 30 Jun 2024 12:00:03 GMT", NOW)).isEqualTo(Duration.ofSeconds(3));
        assertThat(RetryingClient.retryAfter("Sunday, 30-Jun-24 12:00:04 GMT", NOW)).isEqualTo(Duration.ofSeconds(4));
        assertThat(RetryingClient.retryAfter("Sun Jun 30 12:00:05 2024", NOW)).isEqualTo(Duration.ofSeconds(5));
        assertThat(RetryingClient.retryAfter("Sat, 29 Jun 2024 12:00:00 GMT", NOW)).as("in the past").isZero();
        assertThat(RetryingClient.retryAfter("99999999999999999999", NOW)).isGreaterThan(Duration.ofDays(365));
        assertThat(RetryingClient.retryAfter("-1", NOW)).isNull();
        assertThat(RetryingClient.retryAfter("soon", NOW)).isNull();
        assertThat(RetryingClient.retryAfter("", NOW)).isNull();
        assertThat(RetryingClient.retryAfter(null, NOW)).isNull();
    }

    // ---- the server

    /** A clock that only the test's sleeper moves. */
    private static final class MovingClock extends Clock {
        private final AtomicReference<Instant> now;

        MovingClock(Instant start) {
            this.now = new AtomicReference<>(start);
        }

        void advance(Duration d) {
            now.updateAndGet(t -> t.plus(d));
        }

        @Override
        public Instant instant() {
            return now.get();
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    }

    record Received(String method, List<String> keys, String body) {
    }

    private record Answer(int status, Map<String, String> headers, String body, boolean hang) {
    }

    /** Answers each request with the next scripted answer; {@code 599} once the script is exhausted. */
    private static final class ScriptedServer implements AutoCloseable {
        private final HttpServer http;
        private final ExecutorService executor = Executors.newCachedThreadPool();
        private final Queue<Answer> script = new ConcurrentLinkedQueue<>();
        private final List<Received> received = new CopyOnWriteArrayList<>();
        private final CountDownLatch release = new CountDownLatch(1);

        ScriptedServer() throws IOException {
            http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            http.createContext("/", this::handle);
            http.setExecutor(executor);
            http.start();
        }

        URI uri(String path) {
            return URI.create("http://127.0.0.1:" + http.getAddress().getPort() + path);
        }

        void answer(int status, Map<String, String> headers, String body) {
            script.add(new Answer(status, headers, body, false));
        }

        /** The next request is held without an answer until the server closes. */
        void hang() {
            script.add(new Answer(0, Map.of(), "", true));
        }

        List<Received> received() {
            return new ArrayList<>(received);
        }

        private void handle(HttpExchange exchange) throws IOException {
            try {
                String body = new String(exchange.getRequestBody().readAllBytes(), UTF_8);
                List<String> keys = exchange.getRequestHeaders().getOrDefault("Idempotency-Key", List.of());
                received.add(new Received(exchange.getRequestMethod(), List.copyOf(keys), body));
                Answer answer = script.poll();
                if (answer == null) {
                    answer = new Answer(599, Map.of(), "script exhausted", false);
                }
                if (answer.hang()) {
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return;
                }
                answer.headers().forEach((name, value) -> exchange.getResponseHeaders().add(name, value));
                byte[] bytes = answer.body().getBytes(UTF_8);
                exchange.sendResponseHeaders(answer.status(), bytes.length == 0 ? -1 : bytes.length);
                if (bytes.length > 0) {
                    try (OutputStream out = exchange.getResponseBody()) {
                        out.write(bytes);
                    }
                }
            } finally {
                exchange.close();
            }
        }

        @Override
        public void close() {
            release.countDown();
            http.stop(0);
            executor.shutdownNow();
        }
    }
}
