package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static io.retrysafe.gateway.GatewayHttp.basic;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The gateway on the public edge, tried as an attacker would: every request it forwards has a checked caller (or is
 * declared public), the upstream learns the caller only from the gateway, what is matched is what is forwarded,
 * bodies and answers pass unchanged, and the gateway's own endpoints shadow nothing of the upstream's. Each subclass
 * runs it on one store: on Redis, protected requests take the non-blocking path.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class EdgeContract {
    private static final String ALICE = basic("alice", "alice-secret");
    private static final String CALLER = "X-RetrySafe-Caller";

    private Path dir;
    private TestUpstream upstream;
    private Gateway gateway;
    private GatewayHttp client;
    private GatewayHttp admin;
    /** A key of each test's own (one instance runs every test). */
    private String key;

    /** The {@code store:} section. */
    abstract String store();

    /** The environment the {@code store:} section names. */
    abstract Map<String, String> env();

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("retrysafe-gateway-it");
        upstream = TestUpstream.start();
        Files.writeString(dir.resolve("users.txt"), "alice:" + BCrypt.hashpw("alice-secret", BCrypt.gensalt(4)) + "\n");
        gateway = Gateway.start(ConfigLoader.parse("gateway.yaml", yaml(false), env(), dir), env());
        client = new GatewayHttp(gateway.port());
        admin = new GatewayHttp(gateway.adminPort());
    }

    /** The gateway's configuration, on the subclass's store. */
    private String yaml(boolean caseSensitive) {
        return """
                listen:
                  port: 0
                admin:
                  port: 0
                upstream:
                  url: %s
                  response-timeout: 60s
                  connect-timeout: 10s
                  chunked-requests: false
                scope:
                  basic:
                    users-file: users.txt
                paths:
                  case-sensitive: %s
                  public:
                    - method: GET
                      path: /status
                store:
                  %s
                idempotency:
                  max-request-bytes: 1024
                routes:
                  - method: POST
                    path: /payments
                  - method: POST
                    path: /payments/{id}/refunds
                """.formatted(upstream.url(), caseSensitive, store().indent(2).strip());
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
    }

    // ------------------------------------------------------------------ callers

    @Test
    void aWrongPasswordIsRefusedOnPathsNoRouteProtectsToo() throws Exception {
        HttpResponse<String> wrong = client.send(get("/payments/p-1").header("Authorization",
                basic("alice", "not-her-password")));
        HttpResponse<String> none = client.send(get("/payments/p-1"));

        assertProblem(wrong, 401, "/problems/unauthenticated");
        assertThat(wrong.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(c -> assertThat(c)
                .startsWith("Basic realm="));
        assertProblem(none, 401, "/problems/unauthenticated");
        assertThat(upstream.callsOn("/payments/p-1")).isZero();
    }

    /**
     * A guess costs one bcrypt check, however often it is sent, one after another or all at once, and an unknown user
     * costs one as a wrong password does: counted by the admin port's meter of the checks made.
     */
    @Test
    void aGuessCostsOneCheckHoweverOftenItIsSentAndAnUnknownUserCostsWhatAWrongPasswordCosts() throws Exception {
        double before = passwordChecks("refused");
        for (int i = 0; i < 10; i++) {
            assertProblem(client.send(get("/payments/p-1").header("Authorization", basic("alice", "guess-" + key))),
                    401, "/problems/unauthenticated");
        }
        double afterOneGuess = passwordChecks("refused");
        List<CompletableFuture<HttpResponse<String>>> atOnce = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            atOnce.add(client.sendAsync(get("/payments/p-1").header("Authorization", basic("alice", "all-" + key))));
        }
        for (CompletableFuture<HttpResponse<String>> answer : atOnce) {
            assertProblem(answer.get(60, TimeUnit.SECONDS), 401, "/problems/unauthenticated");
        }
        double afterTogether = passwordChecks("refused");
        for (int i = 0; i < 10; i++) {
            assertProblem(client.send(get("/payments/p-1").header("Authorization", basic("nobody-" + key, "x"))),
                    401, "/problems/unauthenticated");
        }

        assertThat(afterOneGuess - before).as("ten sends of one guess").isEqualTo(1);
        assertThat(afterTogether - afterOneGuess).as("twenty sends of one guess at once").isEqualTo(1);
        assertThat(passwordChecks("refused") - afterTogether).as("ten sends of an unknown user").isEqualTo(1);
        assertThat(upstream.callsOn("/payments/p-1")).isZero();
    }

    @Test
    void theUpstreamLearnsTheCallerTheGatewayCheckedNeverOneTheClientNamed() throws Exception {
        HttpResponse<String> read = client.send(get("/payments/p-2").header("Authorization", ALICE)
                .header(CALLER, "bob"));
        assertThat(read.statusCode()).isEqualTo(201);
        assertThat(upstream.lastHeaders).containsEntry(CALLER.toLowerCase(), "alice");

        HttpResponse<String> pay = client.send(client.post("/payments", ALICE, key, "{\"amount\":1}").header(CALLER,
                "bob"));
        assertThat(pay.statusCode()).isEqualTo(201);
        assertThat(upstream.lastHeaders).containsEntry(CALLER.toLowerCase(), "alice");
    }

    @Test
    void aPublicPathIsForwardedWithoutACallerEvenOneTheClientNamed() throws Exception {
        HttpResponse<String> status = client.send(get("/status").header(CALLER, "alice"));

        assertThat(status.statusCode()).isEqualTo(201);
        assertThat(upstream.lastPath).isEqualTo("/status");
        assertThat(upstream.lastHeaders).doesNotContainKey(CALLER.toLowerCase());
    }

    // ------------------------------------------------------------------ paths and methods

    @Test
    void aRouteSpelledInAnotherCaseOrWithATrailingSlashIsProtectedAndForwardedAsTheRouteSpellsIt()
            throws Exception {
        HttpResponse<String> anonymous = client.send(client.post("/PAYMENTS", null, null, "{\"amount\":1}"));
        HttpResponse<String> noKey = client.send(client.post("/PAYMENTS", ALICE, null, "{\"amount\":1}"));
        assertProblem(anonymous, 401, "/problems/unauthenticated");
        assertProblem(noKey, 400, "/problems/missing-key");
        assertThat(upstream.callsOn("/PAYMENTS")).isZero();

        HttpResponse<String> paid = client.send(client.post("/Payments/", ALICE, key, "{\"amount\":1}"));
        HttpResponse<String> again = client.send(client.post("/payments", ALICE, key, "{\"amount\":1}"));
        assertThat(paid.statusCode()).isEqualTo(201);
        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(upstream.lastPath).isEqualTo("/payments");
        assertThat(upstream.calls(key)).isEqualTo(1);

        HttpResponse<String> refund = client.send(client.post("/PAYMENTS/P-9/Refunds", ALICE, null, "{}"));
        assertProblem(refund, 400, "/problems/missing-key");
    }

    /**
     * With {@code paths.case-sensitive: true}, for an upstream that routes so, another case is another path: not
     * the route, and forwarded as spelled (its caller still checked); a trailing slash is still the route.
     */
    @Test
    void aCaseSensitiveGatewayForwardsAnotherCaseAsSpelledAndProtectsOnlyTheRoutesOwn() throws Exception {
        try (Gateway exact = Gateway.start(ConfigLoader.parse("gateway.yaml", yaml(true), env(), dir), env())) {
            GatewayHttp http = new GatewayHttp(exact.port());
            int before = upstream.callsOn("/PAYMENTS");

            HttpResponse<String> anonymous = http.send(http.post("/PAYMENTS", null, null, "{\"amount\":1}"));
            HttpResponse<String> otherPath = http.send(http.post("/PAYMENTS", ALICE, null, "{\"amount\":1}"));
            HttpResponse<String> noKey = http.send(http.post("/payments/", ALICE, null, "{\"amount\":1}"));
            HttpResponse<String> paid = http.send(http.post("/payments/", ALICE, key, "{\"amount\":1}"));

            assertProblem(anonymous, 401, "/problems/unauthenticated");
            assertThat(otherPath.statusCode()).as("the upstream's own answer").isEqualTo(201);
            assertThat(upstream.callsOn("/PAYMENTS")).as("forwarded once, as spelled").isEqualTo(before + 1);
            assertProblem(noKey, 400, "/problems/missing-key");
            assertThat(paid.statusCode()).isEqualTo(201);
            assertThat(upstream.lastPath).isEqualTo("/payments");
            assertThat(upstream.calls(key)).isEqualTo(1);
        }
    }

    @Test
    void aPathSpelledSoThatTheUpstreamMayReadItAnotherWayIsRefused() throws Exception {
        for (String path : new String[] {"/payments;x", "/./payments", "//payments", "/p%61yments", "/x/../payments",
                "/payments%2Fx/refunds", "/payments/%2e%2e/payments", "/payments\\x"}) {
            String k = UUID.randomUUID().toString();
            String answer = GatewayHttp.raw(gateway.port(), "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: "
                    + ALICE + "\r\nIdempotency-Key: " + k + "\r\nContent-Type: application/json\r\nContent-Length: 2"
                    + "\r\nConnection: close\r\n\r\n{}");

            assertThat(answer).as(path).startsWith("HTTP/1.1 400 ").containsIgnoringCase(
                    "Content-Type: application/problem+json");
            assertThat(upstream.calls(k)).as(path).isZero();
        }
    }

    @Test
    void aMethodOverrideIsRefusedNotForwarded() throws Exception {
        for (String header : new String[] {"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"}) {
            HttpResponse<String> r = client.send(client.post("/payments/p-3/cancel", ALICE, null, "{}")
                    .header(header, "DELETE"));

            assertProblem(r, 400, "/problems/request-rejected");
        }
        assertThat(upstream.callsOn("/payments/p-3/cancel")).isZero();
    }

    @Test
    void aRequestRefusedBeforeItsBodyArrivedIsAnsweredWithConnectionClose() throws Exception {
        // Each sends its head and no body yet: the gateway answers without it and closes the connection. A
        // keep-alive client must be told so, or it sends its next request on a connection that is closing.
        Map<String, String> refused = Map.of(
                "POST /payments/p-3/cancel HTTP/1.1\r\nAuthorization: " + ALICE + "\r\nX-HTTP-Method-Override: "
                        + "DELETE\r\n", "400",
                "POST /payments/p-1 HTTP/1.1\r\nAuthorization: " + basic("alice", "not-her-password") + "\r\n", "401",
                "POST /payments HTTP/1.1\r\nAuthorization: " + ALICE + "\r\n", "400",
                "POST /payments HTTP/1.1\r\nAuthorization: " + ALICE + "\r\nIdempotency-Key: " + key
                        + "\r\nContent-Length: 5000\r\n", "413");
        int before = upstream.callsOn("/payments") + upstream.callsOn("/payments/p-1")
                + upstream.callsOn("/payments/p-3/cancel");
        for (Map.Entry<String, String> request : refused.entrySet()) {
            String head = request.getKey() + "Host: gw\r\nContent-Type: application/json\r\n"
                    + (request.getKey().contains("Content-Length") ? "" : "Content-Length: 2\r\n") + "\r\n";
            String answer = GatewayHttp.raw(gateway.port(), head);

            assertThat(answer).as(head).startsWith("HTTP/1.1 " + request.getValue() + " ")
                    .containsIgnoringCase("Connection: close");
        }
        assertThat(upstream.callsOn("/payments") + upstream.callsOn("/payments/p-1")
                + upstream.callsOn("/payments/p-3/cancel")).as("none forwarded").isEqualTo(before);
    }

    /**
     * A client that asked to be told before it sends its body ({@code Expect: 100-continue}) and is refused sends
     * none: the refusal is the only answer it gets, never a {@code 100 Continue} after it, and nothing is forwarded.
     */
    @Test
    void aRefusedRequestThatExpectsToContinueGetsTheRefusalAlone() throws Exception {
        int before = upstream.callsOn("/payments");

        String answer = GatewayHttp.raw(gateway.port(), "POST /payments HTTP/1.1\r\nHost: gw\r\nAuthorization: "
                + ALICE + "\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n");

        assertThat(GatewayHttp.statusLines(answer)).hasSize(1).allMatch(line -> line.startsWith("HTTP/1.1 400 "));
        assertThat(answer).contains("\"type\":\"/problems/missing-key\"");
        assertThat(upstream.callsOn("/payments")).as("not forwarded").isEqualTo(before);
    }

    /**
     * Request smuggling: a head whose body's end a server and an upstream could each find elsewhere (both a length
     * and chunked, two lengths) is refused 400 as a problem, the connection closed, and nothing of it is forwarded,
     * neither the request nor the one hidden in its body; on a protected route and on a path none protects alike.
     */
    @Test
    void aHeadThatFramesItsBodyTwoWaysIsRefusedAndItsConnectionClosed() throws Exception {
        String hidden = "POST /payments/p-9/refunds HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\n\r\n";
        String chunked = "0\r\n\r\n" + hidden;
        List<String> heads = List.of(
                "Content-Length: " + chunked.length() + "\r\nTransfer-Encoding: chunked\r\n",
                "Transfer-Encoding: chunked\r\nContent-Length: " + chunked.length() + "\r\n",
                "Content-Length: 5\r\nContent-Length: " + chunked.length() + "\r\n",
                "Content-Length: 5, " + chunked.length() + "\r\n");
        for (String path : List.of("/payments", "/uploads/smuggled")) {
            for (String framing : heads) {
                String request = "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: " + ALICE
                        + "\r\nIdempotency-Key: " + UUID.randomUUID() + "\r\nContent-Type: application/json\r\n"
                        + framing + "\r\n" + chunked;

                // raw() reads to the end of the stream: it returns only once the gateway has closed the connection.
                String answer = GatewayHttp.raw(gateway.port(), request);

                assertThat(GatewayHttp.statusLines(answer)).as(path + ": " + framing).hasSize(1)
                        .allMatch(line -> line.startsWith("HTTP/1.1 400 "));
                assertThat(answer).as(path + ": " + framing).containsIgnoringCase("application/problem+json")
                        .containsIgnoringCase("Connection: close");
            }
        }
        assertThat(upstream.callsOn("/payments/p-9/refunds")).as("the hidden request").isZero();
        assertThat(upstream.callsOn("/uploads/smuggled")).isZero();
    }

    @Test
    void aControlCharacterInTheKeyIsAProblemNotTheServersHtmlPage() throws Exception {
        String answer = GatewayHttp.raw(gateway.port(), "POST /payments HTTP/1.1\r\nHost: gw\r\nAuthorization: " + ALICE
                + "\r\nIdempotency-Key: ab\u0001cd\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                + "Connection: close\r\n\r\n{}");

        assertThat(answer).startsWith("HTTP/1.1 400 ").containsIgnoringCase("Content-Type: application/problem+json")
                .contains("\"type\":\"/problems/request-rejected\"").doesNotContain("<html");
    }

    // ------------------------------------------------------------------ bodies

    @Test
    void aFormBodyReachesTheUpstreamAsTheClientSentIt() throws Exception {
        String form = "account=acc-1&amount=7";
        HttpResponse<String> paid = client.send(form("/payments", key, form));
        HttpResponse<String> replay = client.send(form("/payments", key, form));
        HttpResponse<String> other = client.send(form("/payments", key, "account=acc-1&amount=8"));

        assertThat(paid.statusCode()).isEqualTo(201);
        assertThat(paid.body()).contains("\"received\":" + form.length());
        assertThat(new String(upstream.lastBody, UTF_8)).isEqualTo(form);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertProblem(other, 422, "/problems/key-reused");
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    @Test
    void aBodyOfKnownLengthIsForwardedWithThatLength() throws Exception {
        byte[] body = new byte[3_000_000];
        Arrays.fill(body, (byte) 'x');
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(client.uri("/uploads/known"))
                .header("Authorization", ALICE).POST(HttpRequest.BodyPublishers.ofByteArray(body)));

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(upstream.lastHeaders).containsEntry("content-length", "3000000")
                .doesNotContainKey("transfer-encoding");
        assertThat(upstream.lastBody).hasSize(body.length);
    }

    @Test
    void aChunkedBodyIsForwardedWithItsLengthWhenTheUpstreamTakesNoChunkedRequests() throws Exception {
        byte[] body = new byte[5_000];
        Arrays.fill(body, (byte) 'y');
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(client.uri("/uploads/chunked"))
                .header("Authorization", ALICE)
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))));

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(upstream.lastHeaders).containsEntry("content-length", "5000").doesNotContainKey("transfer-encoding");
        assertThat(upstream.lastBody).isEqualTo(body);
    }

    /** A small body is read without a thread, a large one by a request thread: both are bounded alike. */
    @ParameterizedTest
    @ValueSource(ints = {2_000, 100_000})
    void aBodyTricklingInSlowerThanTheMinimumRateIsCutOff(int length) throws Exception {
        String answer = trickle("/uploads/slow", "", length);

        assertThat(answer).startsWith("HTTP/1.1 408 ").containsIgnoringCase("application/problem+json");
        assertThat(upstream.callsOn("/uploads/slow")).isZero();
    }

    /**
     * On a protected route the body cut off is incomplete: nothing is forwarded, and the key was never claimed. (Within
     * this gateway's bound of 1024 bytes a body is read without a thread.)
     */
    @Test
    void aBodyTricklingInOnAProtectedRouteIsIncompleteAndItsKeyStaysFree() throws Exception {
        int before = upstream.callsOn("/payments");

        String answer = trickle("/payments", "Idempotency-Key: " + key + "\r\nContent-Type: application/json\r\n",
                1_000);

        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("\"type\":\"/problems/incomplete-body\"");
        assertThat(upstream.callsOn("/payments")).as("not forwarded").isEqualTo(before);
        HttpResponse<String> retry = client.send(client.post("/payments", ALICE, key, "{\"amount\":3}"));
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    /**
     * Sends a head declaring {@code length} bytes, then its body a byte every 200 ms, far below the gateway's 1024 bytes
     * a second, until it answers (once the body's first 10 s have passed): the attack itself. Returns the answer.
     */
    private String trickle(String path, String headers, int length) throws Exception {
        try (Socket slow = new Socket("127.0.0.1", gateway.port())) {
            slow.setSoTimeout(100);
            OutputStream out = slow.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: " + ALICE + "\r\n" + headers
                    + "Content-Length: " + length + "\r\n\r\n").getBytes(UTF_8));
            byte[] answer = new byte[0];
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
            while (answer.length == 0 && System.nanoTime() < deadline) {
                try {
                    out.write('x');
                    out.flush();
                } catch (IOException e) {
                    break; // the gateway closed the connection
                }
                try {
                    answer = slow.getInputStream().readNBytes(12);
                } catch (SocketTimeoutException e) {
                    TimeUnit.MILLISECONDS.sleep(100);
                }
            }
            slow.setSoTimeout(10_000);
            return new String(answer, UTF_8) + new String(slow.getInputStream().readAllBytes(), UTF_8);
        }
    }

    // ------------------------------------------------------------------ answers

    @Test
    void aGzipAnswerIsReplayedAsTheSameGzipLabelledSo() throws Exception {
        HttpResponse<byte[]> first = client.sendForBytes(client.post("/payments?gzip", ALICE, key, "{\"amount\":2}"));
        HttpResponse<byte[]> replay = client.sendForBytes(client.post("/payments?gzip", ALICE, key, "{\"amount\":2}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Content-Encoding")).hasValue("gzip");
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Content-Encoding")).hasValue("gzip");
        assertThat(replay.headers().firstValue("Vary")).hasValue("Accept-Encoding");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(new String(new GZIPInputStream(new ByteArrayInputStream(replay.body())).readAllBytes(), UTF_8))
                .contains("\"payment\":");
    }

    // ------------------------------------------------------------------ the gateway's own endpoints

    @Test
    void healthAndMetricsAreOnTheAdminPortAndTheUpstreamsOwnPathsAreForwarded() throws Exception {
        HttpResponse<String> health = admin.send(get("/health", admin));
        HttpResponse<String> metrics = admin.send(get("/metrics", admin));
        HttpResponse<String> upstreamHealth = client.send(get("/health").header("Authorization", ALICE));
        HttpResponse<String> upstreamMetrics = client.send(get("/metrics").header("Authorization", ALICE));

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
        assertThat(metrics.body()).contains("retrysafe_requests_total{");
        assertThat(upstreamHealth.statusCode()).isEqualTo(201);
        assertThat(upstreamMetrics.statusCode()).isEqualTo(201);
        assertThat(upstream.callsOn("/health")).isEqualTo(1);
        assertThat(upstream.callsOn("/metrics")).isEqualTo(1);
    }

    // ------------------------------------------------------------------ helpers

    /** The admin port's count of bcrypt checks made with this outcome. */
    private double passwordChecks(String outcome) throws Exception {
        String line = "retrysafe_gateway_password_checks_total{outcome=\"" + outcome + "\"} ";
        return admin.send(get("/metrics", admin)).body().lines().filter(l -> l.startsWith(line))
                .mapToDouble(l -> Double.parseDouble(l.substring(line.length()).trim())).findFirst()
                .orElseThrow(() -> new AssertionError("no " + line));
    }

    private HttpRequest.Builder get(String path) {
        return get(path, client);
    }

    private HttpRequest.Builder get(String path, GatewayHttp on) {
        return HttpRequest.newBuilder(on.uri(path)).GET();
    }

    private HttpRequest.Builder form(String path, String key, String form) {
        return HttpRequest.newBuilder(client.uri(path)).header("Authorization", ALICE).header("Idempotency-Key", key)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
    }
}
