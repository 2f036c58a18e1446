package io.retrysafe.examples.paymentsreactive;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.testservices.NonBlockingCheck;
import io.retrysafe.testservices.RawHttp;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The reactive service on Netty, on a random port over the test PostgreSQL, seen by a client over real
 * HTTP: the shared conformance suite, with the servlet example's expectations ({@link Conformance}),
 * and what only this service has: its ledger and {@code GET /payments/{id}}. BlockHound watches the
 * service's threads from the first test on: a call that blocks on Netty's event loop or a Reactor
 * thread fails its request with a 500, and so the test that sent it.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Import(HoldingWebFilter.Config.class)
class PaymentsReactiveIT {
    /**
     * After the service has started: Spring Boot's R2DBC schema initializer reads {@code schema.sql}
     * from its jar on a Reactor thread while the service starts, before any request.
     */
    @BeforeEach
    void watchTheEventLoops() {
        NonBlockingCheck.install();
    }

    @LocalServerPort
    int port;

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        ServiceDatabase.properties().forEach((name, value) -> registry.add(name, () -> value));
    }

    /** The suite every stack passes, against this service. */
    @Nested
    class Conformance extends HttpConformance {
        @Override
        protected ConformanceTarget target() {
            return new ServiceTarget(() -> port);
        }
    }

    @Test
    void aPaymentIsBookedOnceInTheLedgerAndItsLocationReadsItForItsPayerOnly() throws Exception {
        ServiceTarget target = new ServiceTarget(() -> port);
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> created = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
        client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));

        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(PaymentsDatabase.payments(account)).isEqualTo(1);
        assertThat(PaymentsDatabase.ledgerEntries(account)).isEqualTo(1);
        assertThat(PaymentsDatabase.balance(account)).isEqualTo(9_900);
        String location = created.headers().firstValue("Location").orElseThrow();
        HttpResponse<String> read = client.send(client.request(target.firstUser(), location).GET());
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).contains("\"amount\":100", "\"account\":\"" + account + "\"");
        assertThat(client.send(client.request(target.secondUser(), location).GET()).statusCode()).isEqualTo(404);
    }

    /** As on the servlet example: open, and UP only when its checks (the R2DBC database among them) are. */
    @Test
    void healthNeedsNoCredentials() throws Exception {
        HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/health")).build(), HttpResponse.BodyHandlers.ofString());

        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
    }

    /** A request written as raw bytes: HTTP clients refuse to send a control character in a header. */
    private RawHttp.Response rawPost(String target, String header, String value) throws Exception {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                "alice:alice-secret".getBytes(StandardCharsets.UTF_8)));
        headers.put("Content-Type", "application/json");
        headers.put("Idempotency-Key", UUID.randomUUID().toString());
        headers.put(header, value);
        return RawHttp.exchange(port, RawHttp.request("POST", target, headers,
                "{\"account\":\"acc-1\",\"amount\":1}".getBytes(StandardCharsets.UTF_8)));
    }

    /** Reactor Netty refuses these before any filter runs; on a protected route the answer is still a problem. */
    @Test
    void aKeyWithAControlCharacterIsTheInvalidKeyProblemNotAnEmpty400() throws Exception {
        RawHttp.Response response = rawPost("/payments", "Idempotency-Key", "abc\u0001def");

        assertThat(response.status()).as(response.toString()).isEqualTo(400);
        assertThat(response.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(response.text()).contains("\"type\":\"/problems/invalid-key\"", "\"status\":400",
                "\"rule\":\"not_printable_ascii\"");
    }

    @Test
    void anotherHeaderWithAControlCharacterOnAProtectedRouteIsTheRequestRejectedProblem() throws Exception {
        RawHttp.Response response = rawPost("/payments", "X-Note", "abc\u007fdef");

        assertThat(response.status()).as(response.toString()).isEqualTo(400);
        assertThat(response.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(response.text()).contains("\"type\":\"/problems/request-rejected\"");
    }

    @Test
    void anUnprotectedRouteKeepsTheServersOwnAnswer() throws Exception {
        RawHttp.Response response = rawPost("/elsewhere", "Idempotency-Key", "abc\u0001def");

        assertThat(response.status()).isEqualTo(400);
        assertThat(response.header("Content-Type")).isNull();
        assertThat(response.body()).isEmpty();
    }
}
