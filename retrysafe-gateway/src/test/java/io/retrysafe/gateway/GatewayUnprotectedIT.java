package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static io.retrysafe.gateway.GatewayHttp.basic;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.ServerSocket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * Requests no route protects, which await the upstream's answer without a request thread: every answer reaches its
 * own client whole, whatever its size or framing, and each upstream fault is answered as on a protected route.
 */
class GatewayUnprotectedIT {
    private static final String ALICE = basic("alice", "alice-secret");

    @TempDir
    static Path dir;
    private static TestUpstream upstream;
    private static Gateway gateway;
    private static GatewayHttp client;
    private static int closedPort;

    @BeforeAll
    static void start() throws Exception {
        upstream = TestUpstream.start();
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort(); // nothing listens there once closed
        }
        Files.writeString(dir.resolve("users.txt"), "alice:" + BCrypt.hashpw("alice-secret", BCrypt.gensalt(4)) + "\n");
        // Without a key, the optional routes are not protected: they only name another upstream or time-out.
        String yaml = """
                listen:
                  port: 0
                admin:
                  port: 0
                upstream:
                  url: %s
                  response-timeout: 60s
                  connect-timeout: 10s
                scope:
                  basic:
                    users-file: users.txt
                store:
                  %s
                routes:
                  - method: POST
                    path: /refused
                    key-required: false
                    upstream: http://127.0.0.1:%d
                  - method: POST
                    path: /hanging
                    key-required: false
                    response-timeout: 2s
                """.formatted(upstream.url(), TestStores.postgres(TestStores.table()).indent(2).strip(), closedPort);
        Map<String, String> env = TestStores.postgresEnv();
        gateway = Gateway.start(ConfigLoader.parse("gateway.yaml", yaml, env, dir), env);
        client = new GatewayHttp(gateway.port());
    }

    @AfterAll
    static void stop() {
        if (gateway != null) {
            gateway.close();
        }
        if (upstream != null) {
            upstream.close();
        }
    }

    @Test
    void aSmallAnswerArrivesWithItsStatusAndHeaders() throws Exception {
        HttpResponse<String> r = client.send(client.post("/orders?status=202", ALICE, null, "{\"amount\":3}"));

        assertThat(r.statusCode()).isEqualTo(202);
        assertThat(r.body()).contains("\"received\":12");
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(r.headers().firstValue("Location")).hasValueSatisfying(l -> assertThat(l).startsWith("/payments/"));
        assertThat(r.headers().firstValue("Set-Cookie")).hasValueSatisfying(c -> assertThat(c).startsWith("session="));
    }

    @Test
    void answersOfAnySizeAndFramingArriveWhole() throws Exception {
        // At the bound written from the client's thread, over it, and of unknown length: streamed by a request thread.
        for (String query : List.of("big=" + CollectedBody.MAX_BYTES, "big=" + (CollectedBody.MAX_BYTES + 1),
                "big=" + 3 * 1024 * 1024, "big=300000&chunked", "big=10&chunked")) {
            HttpResponse<byte[]> r = client.sendForBytes(client.post("/files?" + query, ALICE, null, "{}"));

            int size = Integer.parseInt(query.replaceAll("big=(\\d+).*", "$1"));
            assertThat(r.statusCode()).as(query).isEqualTo(201);
            assertThat(r.body()).as(query).hasSize(size).containsOnly((byte) 'x');
        }
    }

    @Test
    void requestsPipelinedOnOneConnectionAreEachAnsweredInOrder() throws Exception {
        // Each one after the first is read by the thread that wrote the answer ahead of it.
        String path = "/orders/pipelined-" + UUID.randomUUID();
        String request = "GET " + path + "?status=%d HTTP/1.1\r\nHost: gw\r\nAuthorization: " + ALICE + "\r\n%s\r\n";
        String answers = GatewayHttp.raw(gateway.port(), request.formatted(200, "").repeat(3)
                + request.formatted(204, "Connection: close\r\n"));

        assertThat(GatewayHttp.statusLines(answers)).as(answers)
                .containsExactly("HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 204 No Content");
        assertThat(upstream.callsOn(path)).isEqualTo(4);
    }

    @Test
    void headIsAnsweredWithoutABody() throws Exception {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(client.uri("/orders/o-1"))
                .header("Authorization", ALICE).method("HEAD", HttpRequest.BodyPublishers.noBody()));

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(r.body()).isEmpty();
    }

    @Test
    void manyConcurrentRequestsEachGetTheirOwnAnswer() throws Exception {
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<HttpResponse<String>>> answers = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String body = "{\"amount\":" + "1".repeat(i + 1) + "}";
                Callable<HttpResponse<String>> send = () -> client.send(client.post("/orders?delay=50", ALICE, null,
                        body));
                answers.add(pool.submit(send));
            }
            for (int i = 0; i < n; i++) {
                HttpResponse<String> r = answers.get(i).get();
                assertThat(r.statusCode()).isEqualTo(201);
                // The upstream tells how much it received: each client's own body, so each client's own answer.
                assertThat(r.body()).contains("\"received\":" + ("{\"amount\":}".length() + i + 1) + "}");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void requestsWaitingOnASlowUpstreamHoldNoThreadSoOthersAreStillAnswered() throws Exception {
        // Parked on their answers, the requests held would leave the gateway no thread to take another.
        int held = 300;
        HttpResponse<String> other = client.whileHeld(upstream, "/slow", held,
                (path, i) -> client.post(path, ALICE, null, "{}"), client.post("/refused", ALICE, null, "{}"));

        assertProblem(other, 503, "/problems/upstream-unavailable");
        assertThat(upstream.callsOn("/slow")).isEqualTo(held);
    }

    @Test
    void anUpstreamThatRefusesTheConnectionIs503WithRetryAfter() throws Exception {
        HttpResponse<String> r = client.send(client.post("/refused", ALICE, null, "{}"));

        assertProblem(r, 503, "/problems/upstream-unavailable");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
    }

    @Test
    void aRequestNoRouteTakesIsAnsweredAsAProtectedOneWhenTheUpstreamRefusesOrNeverAnswers() throws Exception {
        // The default upstream of one gateway refuses connections; another's never answers in time.
        try (Gateway refused = defaultUpstream("http://127.0.0.1:" + closedPort, "60s");
                Gateway hanging = defaultUpstream(upstream.url(), "2s")) {
            GatewayHttp toRefused = new GatewayHttp(refused.port());
            GatewayHttp toHanging = new GatewayHttp(hanging.port());

            HttpResponse<String> notSent = toRefused.send(toRefused.post("/payments", ALICE, null, "{}"));
            HttpResponse<String> noAnswer = toHanging.send(toHanging.post("/unanswered?hang", ALICE, null, "{}"));

            assertProblem(notSent, 503, "/problems/upstream-unavailable");
            assertThat(notSent.headers().firstValue("Retry-After")).hasValue("1");
            assertProblem(noAnswer, 503, "/problems/outcome-unknown");
            assertThat(upstream.callsOn("/unanswered")).isEqualTo(1);
        }
    }

    private static Gateway defaultUpstream(String url, String responseTimeout) throws Exception {
        String yaml = """
                listen:
                  port: 0
                admin:
                  port: 0
                upstream:
                  url: %s
                  response-timeout: %s
                scope:
                  basic:
                    users-file: users.txt
                store:
                  %s
                routes:
                  - method: POST
                    path: /protected
                """.formatted(url, responseTimeout, TestStores.postgres(TestStores.table()).indent(2).strip());
        Map<String, String> env = TestStores.postgresEnv();
        return Gateway.start(ConfigLoader.parse("gateway.yaml", yaml, env, dir), env);
    }

    @Test
    void aRequestSentAndNeverAnsweredIsOutcomeUnknownOnceTheResponseTimeoutEnds() throws Exception {
        HttpResponse<String> r = client.send(client.post("/hanging?hang", ALICE, null, "{}"));

        assertProblem(r, 503, "/problems/outcome-unknown");
        assertThat(upstream.callsOn("/hanging")).isEqualTo(1);
    }

    @Test
    void anAnswerCutShortIsOutcomeUnknownNotAPartOfIt() throws Exception {
        HttpResponse<String> r = client.send(client.post("/cut?cut", ALICE, null, "{}"));

        assertProblem(r, 503, "/problems/outcome-unknown");
    }
}
