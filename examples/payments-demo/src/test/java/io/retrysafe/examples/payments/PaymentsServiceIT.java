package io.retrysafe.examples.payments;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.testservices.TestDatabases;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The example over real HTTP and a real PostgreSQL, as a client sees it. */
class PaymentsServiceIT {
    private static PaymentsService service;
    private static String base;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        service = new PaymentsService(TestDatabases.postgres(), 0).start();
        base = "http://127.0.0.1:" + service.port();
    }

    @AfterAll
    static void stop() {
        service.close();
    }

    private HttpResponse<String> post(String user, List<String> keys, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/payments")).header("X-User", user)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
        keys.forEach(k -> b.header("Idempotency-Key", k));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long payments(String account) throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM demo_payment WHERE account = '" + account + "'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void aRetryReplaysTheFirstAnswerAndChargesOnce() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"account\":\"acc-1\",\"amount\":5}";
        long before = payments("acc-1");
        HttpResponse<String> first = post("alice", List.of(key), body);
        HttpResponse<String> retry = post("alice", List.of(key), body);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(payments("acc-1")).isEqualTo(before + 1);
    }

    @Test
    void theSameKeyWithAnotherBodyIs422AndChargesNothing() throws Exception {
        String key = UUID.randomUUID().toString();
        post("alice", List.of(key), "{\"account\":\"acc-1\",\"amount\":5}");
        long before = payments("acc-1");
        HttpResponse<String> other = post("alice", List.of(key), "{\"account\":\"acc-1\",\"amount\":6}");
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(payments("acc-1")).isEqualTo(before);
    }

    @Test
    void aMissingOrMalformedKeyIs400() throws Exception {
        assertThat(post("alice", List.of(), "{}").statusCode()).isEqualTo(400);
        HttpResponse<String> two = post("alice", List.of("a", "b"), "{}");
        assertThat(two.statusCode()).isEqualTo(400);
        assertThat(two.body()).contains("one value");
        assertThat(post("alice", List.of("x".repeat(256)), "{}").body()).contains("at most 255 characters");
    }

    @Test
    void keysAreScopedByUser() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"account\":\"acc-1\",\"amount\":5}";
        HttpResponse<String> alice = post("alice", List.of(key), body);
        HttpResponse<String> bob = post("bob", List.of(key), body);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(bob.body()).isNotEqualTo(alice.body());
    }

    @Test
    void concurrentIdenticalRequestsMakeOnePayment() throws Exception {
        String key = UUID.randomUUID().toString();
        long before = payments("acc-2");
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < 32; i++) {
            answers.add(http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/payments")).header("X-User", "carol")
                    .header("Idempotency-Key", key).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"account\":\"acc-2\",\"amount\":1}")).build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        List<HttpResponse<String>> responses = answers.stream().map(CompletableFuture::join).toList();
        String created = responses.stream().filter(r -> r.statusCode() == 201).findFirst().orElseThrow().body();
        assertThat(responses).allSatisfy(r -> {
            assertThat(r.statusCode()).isIn(201, 409);
            if (r.statusCode() == 201) {
                assertThat(r.body()).isEqualTo(created);
            } else {
                assertThat(r.headers().firstValue("Retry-After")).isPresent();
            }
        });
        assertThat(responses).filteredOn(r -> r.statusCode() == 201 && r.headers().firstValue("Idempotent-Replayed")
                .isEmpty()).hasSize(1);
        assertThat(payments("acc-2")).isEqualTo(before + 1);
    }

    @Test
    void aRefusalIsStoredAndReplayedToo() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"account\":\"acc-3\",\"amount\":100000000}";
        HttpResponse<String> first = post("dave", List.of(key), body);
        HttpResponse<String> retry = post("dave", List.of(key), body);
        assertThat(first.statusCode()).isEqualTo(402);
        assertThat(retry.statusCode()).isEqualTo(402);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
    }
}
