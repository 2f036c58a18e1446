package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.client.ClientResponse;
import io.retrysafe.client.RetryingClient;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service's database becomes unreachable: the service (a child JVM, reaching PostgreSQL through a
 * {@link TcpProxy} that the test cuts and restores) answers {@code 503} with {@code Retry-After} and
 * runs nothing (fail closed); {@link RetryingClient} keeps retrying, and once the database is back the
 * payment is made, once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RetryingClientDatabaseOutageIT {
    private static final Duration START = Duration.ofSeconds(180);

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private TcpProxy database;
    private ServiceProcess service;
    private int port;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        URI url = URI.create(PaymentsDatabase.url().substring("jdbc:".length()));
        database = new TcpProxy(url.getHost(), url.getPort());
        String throughProxy = PaymentsDatabase.url().replaceFirst("//" + url.getHost() + ":" + url.getPort() + "/",
                "//127.0.0.1:" + database.port() + "/");
        assertThat(throughProxy).contains(":" + database.port() + "/");
        List<String> args = new ArrayList<>(List.of(ServiceDatabase.arguments()));
        args.removeIf(a -> a.startsWith("--spring.datasource.url="));
        args.add("--spring.datasource.url=" + throughProxy);
        // Give up on a connection after 1 s, not Hikari's 30: a request meets the outage quickly.
        args.add("--spring.datasource.hikari.connection-timeout=1000");
        args.add("--spring.datasource.hikari.validation-timeout=500");
        service = ServiceProcess.start(dir, "outage", Map.of(), args.toArray(String[]::new));
        port = service.awaitReady(START);
    }

    @AfterAll
    void stop() throws Exception {
        if (service != null) {
            service.close();
        }
        if (database != null) {
            database.close();
        }
    }

    private HttpRequest pay(String account, long amount) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .timeout(Duration.ofSeconds(60)).header("Authorization", ServiceITSupport.basic("alice"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(ServiceITSupport.payment(account, amount))).build();
    }

    @Test
    void theClientRetriesThe503sOfADatabaseOutageAndPaysOnceItIsBack() throws Exception {
        String account = newAccount(10_000); // directly, not through the proxy
        database.mode(TcpProxy.Mode.DOWN);
        try {
            // What each attempt meets while the database is away.
            HttpResponse<String> unavailable = http.send(HttpRequest.newBuilder(pay(account, 100), (n, v) -> true)
                    .header("Idempotency-Key", UUID.randomUUID().toString()).build(), BodyHandlers.ofString());
            assertThat(unavailable.statusCode()).as(service.log()).isEqualTo(503);
            assertThat(unavailable.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(unavailable.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(unavailable.body()).contains("\"type\":\"/problems/store-unavailable\"");

            List<Duration> waits = new CopyOnWriteArrayList<>();
            RetryingClient client = RetryingClient.builder(http).maxAttempts(10).sleeper(d -> {
                waits.add(d);
                if (waits.size() == 2) {
                    database.mode(TcpProxy.Mode.FORWARD); // the database is back after two refused attempts
                }
            }).build();

            ClientResponse<String> answer = client.send(pay(account, 100), BodyHandlers.ofString());

            assertThat(answer.statusCode()).as(service.log()).isEqualTo(201);
            // Two 503s, then the payment (or one more 503, if the pool had not reconnected yet).
            assertThat(answer.attempts()).isGreaterThanOrEqualTo(3);
            assertThat(answer.replayed()).as("nothing ran before the database came back").isFalse();
            assertThat(waits).hasSize(answer.attempts() - 1).allSatisfy(w -> assertThat(w)
                    .as("Retry-After: 1 is the floor of each wait").isGreaterThanOrEqualTo(Duration.ofSeconds(1)));
            assertThat(answer.body()).contains("\"account\":\"" + account + "\"", "\"balance\":9900");
        } finally {
            database.mode(TcpProxy.Mode.FORWARD);
        }
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aKeyRefusedWith503StoredNothingAndRunsOnceTheDatabaseIsBack() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        RetryingClient once = RetryingClient.builder(http).maxAttempts(1).build();

        database.mode(TcpProxy.Mode.DOWN);
        ClientResponse<String> refused;
        try {
            refused = once.send(pay(account, 100), key, BodyHandlers.ofString());
        } finally {
            database.mode(TcpProxy.Mode.FORWARD);
        }
        ClientResponse<String> later = once.send(pay(account, 100), key, BodyHandlers.ofString());

        assertThat(refused.statusCode()).as("retries ran out during the outage").isEqualTo(503);
        assertThat(later.statusCode()).as(service.log()).isEqualTo(201);
        assertThat(later.replayed()).as("the 503 was not stored under the key").isFalse();
        assertThat(payments(account)).isEqualTo(1);
    }
}
