package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What the gateway does whatever its store and its source of callers: each subclass runs it on one store, with
 * one scope source, against a real server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GatewayContract {
    protected Path dir;
    private TestUpstream upstream;
    private Gateway gateway;
    private GatewayHttp client;
    private final String key = UUID.randomUUID().toString();

    /** The {@code store:} section. */
    abstract String store();

    /** The {@code scope:} section; files it names are written into {@link #dir} first by {@link #prepare()}. */
    abstract String scope();

    /** The {@code WWW-Authenticate} challenges of a 401 for want of a caller; none for a trusted header. */
    abstract List<String> challenge();

    /** Extra environment the configuration reads (passwords, secrets). */
    Map<String, String> env() {
        return Map.of();
    }

    void prepare() throws Exception {
    }

    /** Stops what {@link #prepare()} started, once the gateway and the upstream are stopped. */
    void cleanUp() throws Exception {
    }

    /** Applies the credentials of caller {@code name} (one of alice, bob) to the request. */
    abstract HttpRequest.Builder as(String name, HttpRequest.Builder request);

    /** Credentials the scope source refuses. */
    abstract HttpRequest.Builder asNobody(HttpRequest.Builder request);

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("retrysafe-gateway-it");
        prepare();
        upstream = TestUpstream.start();
        gateway = Gateway.start(config(), env());
        client = new GatewayHttp(gateway.port());
    }

    /** The configuration of the class's gateway: one more started on it shares its store and upstream. */
    GatewayConfig config() {
        String yaml = """
                listen:
                  port: 0
                admin:
                  port: 0
                upstream:
                  url: %s
                  # A loaded machine may be slow to answer: not what these tests are about.
                  response-timeout: 60s
                  connect-timeout: 10s
                scope:
                %s
                store:
                %s
                idempotency:
                  lease: 2s
                routes:
                  - method: POST
                    path: /payments
                  - method: POST
                    path: /burst
                  - method: POST
                    path: /hanging
                    response-timeout: 1s
                """.formatted(upstream.url(), scope().indent(2).stripTrailing(), store().indent(2).stripTrailing());
        return ConfigLoader.parse("gateway.yaml", yaml, env(), dir);
    }

    @AfterAll
    void stop() throws Exception {
        try {
            if (gateway != null) {
                gateway.close();
            }
            if (upstream != null) {
                upstream.close();
            }
        } finally {
            cleanUp();
        }
    }

    private HttpRequest.Builder payment(String path, String key, String json) {
        return client.post(path, null, key, json);
    }

    @Test
    void firstIsForwardedOnceAndTheRetryReplayed() throws Exception {
        HttpResponse<String> first = client.send(as("alice", payment("/payments", key, "{\"amount\":1}")));
        HttpResponse<String> retry = client.send(as("alice", payment("/payments", key, "{\"amount\":1}")));
        HttpResponse<String> reused = client.send(as("alice", payment("/payments", key, "{\"amount\":2}")));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertProblem(reused, 422, "/problems/key-reused");
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    @Test
    void oneCallersKeyIsNotAnothers() throws Exception {
        String shared = UUID.randomUUID().toString();
        HttpResponse<String> alice = client.send(as("alice", payment("/payments", shared, "{\"amount\":1}")));
        HttpResponse<String> bob = client.send(as("bob", payment("/payments", shared, "{\"amount\":1}")));

        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.body()).isNotEqualTo(alice.body());
        assertThat(upstream.calls(shared)).isEqualTo(2);
    }

    @Test
    void noCallerIs401() throws Exception {
        String mine = UUID.randomUUID().toString();
        HttpResponse<String> none = client.send(payment("/payments", mine, "{}"));
        HttpResponse<String> refused = client.send(asNobody(payment("/payments", mine, "{}")));
        assertProblem(none, 401, "/problems/unauthenticated");
        assertProblem(refused, 401, "/problems/unauthenticated");
        assertThat(none.headers().allValues("WWW-Authenticate")).isEqualTo(challenge());
        assertThat(refused.headers().allValues("WWW-Authenticate")).isEqualTo(challenge());
        assertThat(upstream.calls(mine)).isZero();
    }

    @Test
    void sixtyFourConcurrentRequestsWithOneKeyMakeOneUpstreamCall() throws Exception {
        String mine = UUID.randomUUID().toString();
        String block = "burst-" + mine;
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<HttpResponse<String>>> answers = new ArrayList<>();
            CountDownLatch go = new CountDownLatch(1);
            for (int i = 0; i < n; i++) {
                answers.add(pool.submit(() -> {
                    go.await();
                    return client.send(as("alice", payment("/burst?block=" + block, mine, "{\"amount\":100}")));
                }));
            }
            go.countDown();
            // The first is held at the upstream; every duplicate is answered meanwhile, none is sent on.
            Awaitility.await().atMost(Duration.ofSeconds(60))
                    .until(() -> answers.stream().filter(Future::isDone).count() == n - 1);
            upstream.release(block);
            int created = 0;
            for (Future<HttpResponse<String>> f : answers) {
                HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
                assertThat(r.statusCode()).as(r.body()).isIn(201, 409);
                if (r.statusCode() == 201) {
                    created++;
                } else {
                    assertProblem(r, 409, "/problems/request-in-progress");
                    assertThat(r.headers().firstValue("Retry-After")).isPresent();
                }
            }
            assertThat(created).isEqualTo(1);
            assertThat(upstream.calls(mine)).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void sentWithoutAnAnswerStaysInProgressUntilTheLeaseEnds() throws Exception {
        String mine = UUID.randomUUID().toString();
        HttpResponse<String> r = client.send(as("alice", payment("/hanging?hang", mine, "{}")));

        assertProblem(r, 503, "/problems/outcome-unknown");
        assertProblem(client.send(as("alice", payment("/hanging?hang", mine, "{}"))), 409,
                "/problems/request-in-progress");
        assertThat(upstream.calls(mine)).isEqualTo(1);
    }
}
