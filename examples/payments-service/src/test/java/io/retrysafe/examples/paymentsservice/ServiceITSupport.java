package io.retrysafe.examples.paymentsservice;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The service on a random port over the test PostgreSQL, seen by a client over real HTTP. One context for all subclasses. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Import(HoldingFilterConfig.class)
abstract class ServiceITSupport {
    static final String ALICE = "alice";
    static final String BOB = "bob";

    @LocalServerPort
    int port;

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        ServiceDatabase.register(registry);
        // The checkout's calls to the in-process payment provider: a held one is unknown after this.
        registry.add("payments.provider.timeout", () -> "2s");
    }

    /** The demo users' credentials: alice:alice-secret, bob:bob-secret. */
    static String basic(String user) {
        return basic(user, user + "-secret");
    }

    static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    static String payment(String account, long amount) {
        return "{\"account\":\"" + account + "\",\"amount\":" + amount + "}";
    }

    HttpRequest.Builder request(String user, String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(60));
        return user == null ? b : b.header("Authorization", basic(user));
    }

    HttpRequest.Builder postPayment(String user, String key, String body) {
        HttpRequest.Builder b = request(user, "/payments").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return key == null ? b : b.header("Idempotency-Key", key);
    }

    static String checkout(String account, long amount, String card) {
        return "{\"account\":\"" + account + "\",\"amount\":" + amount + ",\"card\":\"" + card + "\"}";
    }

    HttpRequest.Builder postCheckout(String user, String key, String body) {
        HttpRequest.Builder b = request(user, "/checkouts").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return key == null ? b : b.header("Idempotency-Key", key);
    }

    HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(String user, String path) throws Exception {
        return send(request(user, path).GET());
    }
}
