package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.RetrySafe;
import io.retrysafe.servlet.RetrySafeFilter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** {@code retrysafe.enabled=false}: the same service, unprotected, for load comparisons. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "retrysafe.enabled=false")
@DirtiesContext // its own context: close it, and its connections, when done
class RetrySafeDisabledIT {

    @LocalServerPort
    int port;

    @Autowired
    ApplicationContext context;

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
    void noRetrySafeBeansAndNoFilter() {
        assertThat(context.getBeanProvider(RetrySafe.class).getIfAvailable()).isNull();
        assertThat(context.getBeansOfType(FilterRegistrationBean.class).values())
                .noneMatch(r -> r.getFilter() instanceof RetrySafeFilter);
    }

    @Test
    void aRetryPaysAgain() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        String body = ServiceITSupport.payment(account, 100);

        HttpResponse<String> first = send("POST", "/payments", key, body);
        HttpResponse<String> retry = send("POST", "/payments", key, body);
        HttpResponse<String> noKey = send("POST", "/payments", null, body);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(retry.body()).isNotEqualTo(first.body());
        assertThat(noKey.statusCode()).isEqualTo(201);
        assertThat(payments(account)).isEqualTo(3);
    }

    @Test
    void anOrderIsStillPaidOnceByTheTablesUniqueKey() throws Exception {
        String account = newAccount(10_000);
        String order = "ORD-" + UUID.randomUUID();
        String body = ServiceITSupport.payment(account, 100);

        HttpResponse<String> first = send("PUT", "/orders/" + order + "/payment", null, body);
        HttpResponse<String> retry = send("PUT", "/orders/" + order + "/payment", null, body);

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(retry.statusCode()).isEqualTo(409);
        assertThat(retry.body()).contains("\"type\":\"/problems/order-already-paid\"");
        assertThat(payments(account)).isEqualTo(1);
    }
}
