package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static io.retrysafe.gateway.GatewayHttp.basic;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.RecordStatus;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The gateway on one store, with HTTP Basic callers, in front of a JDK HTTP server: the answers of the Idempotency-Key
 * filter, and each upstream fault. Each subclass runs it on one store: on a store that answers without blocking,
 * protected requests take the non-blocking path, so the same answers are asserted of both paths.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ProtectedRouteContract {
    private static final String ALICE = basic("alice", "alice-secret");
    private static final String BOB = basic("bob", "bob-secret");
    private static final Duration LEASE = Duration.ofSeconds(3);

    private Path dir;
    private TestUpstream upstream;
    /** Listening, accepting nothing until a test opens it: its full accept queue makes connect timeouts. */
    private TestUpstream backlogged;
    private Gateway gateway;
    private IdempotencyStore records;
    private int closedPort;
    private GatewayHttp client;

    /** A key of each test's own (one instance runs every test). */
    private String key;

    /** The {@code store:} section. */
    abstract String store();

    /** The environment the {@code store:} section names. */
    abstract Map<String, String> env();

    /** The gateway's records, read directly. */
    abstract IdempotencyStore records();

    /** Closes what {@link #records()} opened. */
    void closeRecords() {
    }

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("retrysafe-gateway-it");
        upstream = TestUpstream.start();
        backlogged = TestUpstream.bound(1);
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort(); // nothing listens there once closed
        }
        Files.writeString(dir.resolve("users.txt"), "# test users\nalice:" + BCrypt.hashpw("alice-secret", BCrypt.gensalt(4))
                + "\nbob:" + BCrypt.hashpw("bob-secret", BCrypt.gensalt(4)) + "\n");
        String yaml = """
                listen:
                  port: 0
                  idle-timeout: 2s
                admin:
                  port: 0
                upstream:
                  url: %s
                  # Loopback, but a loaded machine may be slow to connect and answer: not what these tests are about.
                  response-timeout: 60s
                  connect-timeout: 10s
                scope:
                  basic:
                    users-file: users.txt
                store:
                  %s
                idempotency:
                  max-request-bytes: 1024
                  max-response-bytes: 4096
                  lease: 3s
                routes:
                  - method: POST
                    path: /payments
                    fingerprint:
                      json-members: [/amount]
                  - method: POST
                    path: /refused
                    upstream: http://127.0.0.1:%d
                  - method: POST
                    path: /optional
                    key-required: false
                  - method: POST
                    path: /tenant-payments
                    scope:
                      trusted-header: { name: X-Tenant }
                  - method: POST
                    path: /hanging
                    response-timeout: 2s
                  - method: POST
                    path: /backlogged
                    upstream: %s
                """.formatted(upstream.url(), store().indent(2).strip(), closedPort, backlogged.url());
        gateway = Gateway.start(ConfigLoader.parse("gateway.yaml", yaml, env(), dir), env());
        client = new GatewayHttp(gateway.port());
        records = records();
    }

    @BeforeEach
    void newKey() {
        key = UUID.randomUUID().toString();
    }

    @AfterAll
    void stop() {
        if (gateway != null) {
            gateway.close();
        }
        if (upstream != null) {
            upstream.close();
        }
        if (backlogged != null) {
            backlogged.close();
        }
        closeRecords();
    }

    // ------------------------------------------------------------------ claim, forward, replay

    @Test
    void firstRequestIsForwardedAndTheRetryIsReplayedWithoutASecondCall() throws Exception {
        HttpResponse<String> first = client.send(client.post("/payments", ALICE, key, "{\"amount\":100}"));
        HttpResponse<String> retry = client.send(client.post("/payments", ALICE, key, "{ \"amount\" : 100 }"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).contains("\"attempt\":\"1\"");
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().allValues("Set-Cookie")).as("never stored").isEmpty();
        assertThat(upstream.calls(key)).isEqualTo(1);
        assertThat(upstream.lastHeaders).containsEntry("idempotency-key", key);
    }

    /**
     * Requests sent back to back on one connection, each before the one ahead is answered: once an answer is written,
     * the next request is read by the thread that wrote it (not a pool thread), and each one is still claimed,
     * forwarded and answered once, in order, the retry among them replayed.
     */
    @Test
    void requestsPipelinedOnOneConnectionAreEachAnsweredInOrder() throws Exception {
        List<String> keys = List.of(key, UUID.randomUUID().toString(), key, UUID.randomUUID().toString());
        StringBuilder sent = new StringBuilder();
        for (int i = 0; i < keys.size(); i++) {
            String body = "{\"amount\":100}";
            sent.append("POST /payments HTTP/1.1\r\nHost: gw\r\nAuthorization: ").append(ALICE)
                    .append("\r\nIdempotency-Key: ").append(keys.get(i))
                    .append("\r\nContent-Type: application/json\r\nContent-Length: ").append(body.length())
                    .append(i == keys.size() - 1 ? "\r\nConnection: close" : "").append("\r\n\r\n").append(body);
        }

        String answers = GatewayHttp.raw(gateway.port(), sent.toString());

        assertThat(GatewayHttp.statusLines(answers)).as(answers)
                .containsExactlyElementsOf(Collections.nCopies(keys.size(), "HTTP/1.1 201 Created"));
        assertThat(answers.split("Idempotent-Replayed: true", -1)).as("the third is the first's retry").hasSize(2);
        for (String k : keys) {
            assertThat(upstream.calls(k)).as(k).isEqualTo(1);
        }
    }

    @Test
    void keysAreScopedToTheCaller() throws Exception {
        HttpResponse<String> alice = client.send(client.post("/payments", ALICE, key, "{\"amount\":100}"));
        HttpResponse<String> bob = client.send(client.post("/payments", BOB, key, "{\"amount\":100}"));

        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.body()).isNotEqualTo(alice.body());
        assertThat(upstream.calls(key)).isEqualTo(2);
    }

    @Test
    void noOrWrongCredentialsAre401AndNothingIsSent() throws Exception {
        HttpResponse<String> none = client.send(client.post("/payments", null, key, "{\"amount\":100}"));
        assertProblem(none, 401, "/problems/unauthenticated");
        // RFC 9110 §15.5.2: a 401 carries the challenge a client answers with credentials.
        assertThat(none.headers().allValues("WWW-Authenticate")).containsExactly("Basic realm=\"retrysafe-gateway\", charset=\"UTF-8\"");
        assertProblem(client.send(client.post("/payments", basic("alice", "wrong"), key, "{\"amount\":100}")), 401,
                "/problems/unauthenticated");
        assertProblem(client.send(client.post("/payments", basic("mallory", "x"), key, "{\"amount\":100}")), 401,
                "/problems/unauthenticated");
        assertThat(upstream.calls(key)).isZero();
    }

    @Test
    void aRouteMayNameItsCallersItsOwnWay() throws Exception {
        HttpResponse<String> tenant = client.send(client.post("/tenant-payments", null, key, "{}")
                .header("X-Tenant", "acme"));
        HttpResponse<String> basicOnly = client.send(client.post("/tenant-payments", ALICE, key, "{}"));

        assertThat(tenant.statusCode()).isEqualTo(201);
        assertProblem(basicOnly, 401, "/problems/unauthenticated");
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    @Test
    void sameKeyWithAnotherRequestIs422() throws Exception {
        client.send(client.post("/payments", ALICE, key, "{\"amount\":100}"));

        assertProblem(client.send(client.post("/payments", ALICE, key, "{\"amount\":999}")), 422, "/problems/key-reused");
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    @Test
    void membersOutsideTheFingerprintMayDiffer() throws Exception {
        HttpResponse<String> first = client.send(client.post("/payments", ALICE, key, "{\"amount\":100,\"note\":\"a\"}"));
        HttpResponse<String> retry = client.send(client.post("/payments", ALICE, key, "{\"amount\":100,\"note\":\"b\"}"));

        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
    }

    @Test
    void missingAndMalformedKeysAre400() throws Exception {
        assertProblem(client.send(client.post("/payments", ALICE, null, "{\"amount\":100}")), 400, "/problems/missing-key");
        HttpResponse<String> tooLong = client.send(client.post("/payments", ALICE, "k".repeat(300), "{\"amount\":100}"));
        assertProblem(tooLong, 400, "/problems/invalid-key");
        assertThat(tooLong.body()).contains("\"rule\"");
        assertThat(upstream.calls("k".repeat(300))).isZero();
    }

    @Test
    void bodyOverTheBoundIs413() throws Exception {
        assertProblem(client.send(client.post("/payments", ALICE, key, "{\"amount\":\"" + "9".repeat(2000) + "\"}")), 413,
                "/problems/request-too-large");
        assertThat(upstream.calls(key)).isZero();
    }

    @Test
    void optionalKeyPassesThroughUnprotectedWithoutOneButNeedsItsCaller() throws Exception {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(client.uri("/optional")).header("Authorization",
                ALICE).POST(HttpRequest.BodyPublishers.ofString("{}")));
        HttpResponse<String> anonymous = client.send(HttpRequest.newBuilder(client.uri("/optional"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")));

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(r.body()).contains("\"attempt\":\"null\"");
        assertProblem(anonymous, 401, "/problems/unauthenticated");
    }

    @Test
    void protectedRequestsWaitingOnASlowUpstreamHoldNoThreadSoOthersAreStillAnswered() throws Exception {
        // Each holds a thread only while a store call runs, so another is still claimed and sent.
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            keys.add(UUID.randomUUID().toString());
        }
        HttpResponse<String> other = client.whileHeld(upstream, "/payments", keys.size(),
                (path, i) -> client.post(path, ALICE, keys.get(i), "{\"amount\":1}"),
                client.post("/refused", ALICE, key, "{}"));

        assertProblem(other, 503, "/problems/upstream-unavailable");
        assertThat(keys).allSatisfy(k -> assertThat(upstream.calls(k)).as(k).isEqualTo(1));
    }

    // ------------------------------------------------------------------ upstream faults

    @Test
    void upstreamRefusingTheConnectionIs503WithRetryAfterAndTheKeyIsReleased() throws Exception {
        HttpResponse<String> r = client.send(client.post("/refused", ALICE, key, "{}"));

        assertProblem(r, 503, "/problems/upstream-unavailable");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(status("POST /refused", key)).isEqualTo(RecordStatus.FAILED);
        // Released: the retry is sent again (and refused again), not answered in progress.
        assertProblem(client.send(client.post("/refused", ALICE, key, "{}")), 503, "/problems/upstream-unavailable");
    }

    @Test
    void upstreamConnectTimeoutIs503WithRetryAfterAndTheKeyIsReleased() throws Exception {
        // Nothing accepts, and the accept queue is full: the gateway's connect hangs until its connect-timeout (10s).
        // Filling it takes one 2 s attempt, the gateway's idle timeout here: hence a connection of the request's own.
        List<Socket> queued = backlogged.fillAcceptQueue();
        HttpResponse<String> r;
        try {
            r = client.sendOnNewConnection(client.post("/backlogged", ALICE, key, "{}"));
        } finally {
            for (Socket s : queued) {
                s.close();
            }
        }

        assertProblem(r, 503, "/problems/upstream-unavailable");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(status("POST /backlogged", key)).isEqualTo(RecordStatus.FAILED);
        // The upstream is back. Released, the key is sent again with the retry, as the next attempt, and only then.
        backlogged.open();
        HttpResponse<String> retry = client.send(client.post("/backlogged", ALICE, key, "{}"));
        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
        assertThat(retry.body()).contains("\"attempt\":\"2\"");
        assertThat(backlogged.calls(key)).isEqualTo(1);
        assertThat(status("POST /backlogged", key)).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void upstream5xxIsPassedThroughAndTheRetryIsSentAgain() throws Exception {
        // The same request twice (the query is in the fingerprint); the upstream fails the first only.
        HttpResponse<String> first = client.send(client.post("/payments?fail-once=" + key, ALICE, key, "{\"amount\":1}"));
        HttpResponse<String> retry = client.send(client.post("/payments?fail-once=" + key, ALICE, key, "{\"amount\":1}"));

        assertThat(first.statusCode()).isEqualTo(503);
        assertThat(first.body()).contains("\"attempt\":\"1\"");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).contains("\"attempt\":\"2\"");
        assertThat(upstream.calls(key)).isEqualTo(2);
    }

    @Test
    void requestSentAndNeverAnsweredIsOutcomeUnknownAndTheKeyStaysInProgress() throws Exception {
        HttpResponse<String> r = client.send(client.post("/hanging?hang", ALICE, key, "{\"amount\":5}"));

        assertProblem(r, 503, "/problems/outcome-unknown");
        assertThat(r.headers().firstValue("Retry-After")).hasValue(Long.toString(LEASE.toSeconds()));
        assertThat(status("POST /hanging", key)).isEqualTo(RecordStatus.IN_PROGRESS);
        assertProblem(client.send(client.post("/hanging?hang", ALICE, key, "{\"amount\":5}")), 409, "/problems/request-in-progress");
        assertThat(upstream.calls(key)).as("never a second send while the first may run").isEqualTo(1);
    }

    // ------------------------------------------------------------------ bounds

    @Test
    void upstreamAnswerOverTheBoundIsStreamedWholeAndReplayedWithoutItsBody() throws Exception {
        int size = 3 * 1024 * 1024;
        HttpResponse<byte[]> first = client.sendForBytes(client.post("/payments?big=" + size, ALICE, key, "{\"amount\":7}"));
        HttpResponse<byte[]> retry = client.sendForBytes(client.post("/payments?big=" + size, ALICE, key, "{\"amount\":7}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).hasSize(size);
        assertThat(retry.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Integer.toString(size));
        assertThat(retry.body()).isEmpty();
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    @Test
    void aClientThatStopsSendingItsHeadersIsDisconnectedAfterTheIdleTimeout() throws Exception {
        try (Socket slow = new Socket("127.0.0.1", gateway.port())) {
            slow.setSoTimeout(30_000);
            OutputStream out = slow.getOutputStream();
            out.write("POST /payments HTTP/1.1\r\nHost: x\r\nIdempotency-Key: ".getBytes(UTF_8));
            out.flush();
            InputStream in = slow.getInputStream();
            long start = System.nanoTime();
            // The gateway closes the connection (idle-timeout 2s); the read ends, well before the socket's 30 s.
            while (in.read() >= 0) {
                // whatever Jetty answers before closing
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
        }
    }

    @Test
    void aClientThatStopsSendingItsBodyIs400IncompleteBodyAndNothingIsSentOrKept() throws Exception {
        String answer;
        try (Socket slow = new Socket("127.0.0.1", gateway.port())) {
            slow.setSoTimeout(30_000);
            OutputStream out = slow.getOutputStream();
            out.write(("POST /payments HTTP/1.1\r\nHost: x\r\nAuthorization: " + ALICE
                    + "\r\nIdempotency-Key: " + key + "\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 100\r\n\r\n{\"amount\":").getBytes(UTF_8));
            out.flush();
            // The body stops there. After idle-timeout (2s) without a byte, the gateway answers and closes.
            answer = new String(slow.getInputStream().readAllBytes(), UTF_8);
        }

        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("\r\nContent-Type: application/problem+json\r\n")
                .contains("\"type\":\"/problems/incomplete-body\"").contains("(Content-Length: 100)");
        assertThat(upstream.calls(key)).isZero();
        assertThat(records.inspect(IdempotencyKey.of("user:alice|POST /payments", key))).as("never claimed").isEmpty();
        // The key is free: with its whole body, the request is a first one.
        HttpResponse<String> whole = client.send(client.post("/payments", ALICE, key, "{\"amount\":100}"));
        assertThat(whole.statusCode()).as(whole.body()).isEqualTo(201);
        assertThat(whole.body()).contains("\"attempt\":\"1\"");
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ operations

    @Test
    void healthSaysTheStoreIsUpAndMetricsUseTheMicrometerNames() throws Exception {
        client.send(client.post("/payments", ALICE, key, "{\"amount\":100}"));
        GatewayHttp admin = new GatewayHttp(gateway.adminPort());
        HttpResponse<String> health = admin.send(HttpRequest.newBuilder(admin.uri("/health")).GET());
        HttpResponse<String> metrics = admin.send(HttpRequest.newBuilder(admin.uri("/metrics")).GET());

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body()).contains("retrysafe_requests_total{").contains("outcome=\"executed\"")
                .contains("name=\"gateway\"");
    }

    // ------------------------------------------------------------------ helpers

    private RecordStatus status(String operation, String key) {
        return records.inspect(IdempotencyKey.of("user:alice|" + operation, key)).orElseThrow().status();
    }
}
