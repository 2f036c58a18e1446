package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
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
                    path: /hanging
                    response-timeout: 1s
                """.formatted(upstream.url(), scope().indent(2).stripTrailing(), store().indent(2).stripTrailing());
        gateway = Gateway.start(ConfigLoader.parse("gateway.yaml", yaml, env(), dir), env());
        client = new GatewayHttp(gateway.port());
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
    void sentWithoutAnAnswerStaysInProgressUntilTheLeaseEnds() throws Exception {
        String mine = UUID.randomUUID().toString();
        HttpResponse<String> r = client.send(as("alice", payment("/hanging?hang", mine, "{}")));

        assertProblem(r, 503, "/problems/outcome-unknown");
        assertProblem(client.send(as("alice", payment("/hanging?hang", mine, "{}"))), 409,
                "/problems/request-in-progress");
        assertThat(upstream.calls(mine)).isEqualTo(1);
    }
}
