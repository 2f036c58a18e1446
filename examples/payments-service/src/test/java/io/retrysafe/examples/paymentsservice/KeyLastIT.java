package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The service as the load scripts run it to measure the key written last: order payments (an
 * {@code @Idempotent} method, which that order refuses) switched off, {@code POST /payments} protected.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"retrysafe.store.key-order=last", "payments.orders.enabled=false"})
@DirtiesContext // its own context: close it, and its connections, when done
class KeyLastIT {

    @LocalServerPort
    int port;

    private final HttpClient http = HttpClient.newHttpClient();

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        ServiceDatabase.register(registry);
    }

    private HttpResponse<String> send(String method, String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("Authorization", ServiceITSupport.basic("alice")).header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(body));
        return http.send((key == null ? b : b.header("Idempotency-Key", key)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aRetryIsReplayedAndPaysOnce() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        String body = ServiceITSupport.payment(account, 100);

        HttpResponse<String> first = send("POST", "/payments", key, body);
        HttpResponse<String> retry = send("POST", "/payments", key, body);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(payments(account)).isEqualTo(1);
    }

    @Test
    void orderPaymentsAreSwitchedOff() throws Exception {
        String body = ServiceITSupport.payment(newAccount(10_000), 100);

        assertThat(send("PUT", "/orders/ORD-" + UUID.randomUUID() + "/payment", null, body).statusCode()).isEqualTo(404);
    }
}
