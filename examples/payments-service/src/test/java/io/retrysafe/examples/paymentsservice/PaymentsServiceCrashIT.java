package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service is killed (SIGKILL) while a payment is inside its transaction, after its key was
 * claimed: nothing of it survives, and the client's retry against a fresh instance pays once.
 */
class PaymentsServiceCrashIT {
    private static final Duration START = Duration.ofSeconds(180);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @TempDir
    Path dir;

    private static ServiceProcess start(Path dir, String name, String... args) throws IOException {
        List<String> all = new ArrayList<>(List.of(ServiceDatabase.arguments()));
        all.addAll(List.of(args));
        return ServiceProcess.start(dir, name, Map.of(), all.toArray(String[]::new));
    }

    private static HttpRequest pay(int port, String key, String account) {
        return ServiceProcess.payment(port, key, account, 100);
    }

    @Test
    void aPaymentKilledInsideItsTransactionLeavesNothingAndItsRetryPaysOnce() throws Exception {
        String key = UUID.randomUUID().toString();
        String account;
        int orphan;
        try (ServiceProcess first = start(dir, "first", "--retrysafe.store.lock-timeout=60s")) {
            int port = first.awaitReady(START);
            account = newAccount(10_000); // the service created the tables
            try (ServiceDatabase.RowLock lock = new ServiceDatabase.RowLock(account)) {
                CompletableFuture<HttpResponse<String>> answer = http.sendAsync(pay(port, key, account),
                        HttpResponse.BodyHandlers.ofString());
                // Its transaction has claimed the key and now waits for the account's row lock.
                await().atMost(Duration.ofSeconds(60)).until(() -> lock.waiter() != 0);
                orphan = lock.waiter();

                first.kill();

                assertThatThrownBy(() -> answer.get(60, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(IOException.class);
            } // the lock is released: the dead service's statement proceeds, finds its client gone, rolls back
            await().atMost(Duration.ofSeconds(60)).until(() -> !ServiceDatabase.backendAlive(orphan));
        }
        assertThat(payments(account)).isZero();
        assertThat(balance(account)).isEqualTo(10_000);
        assertThat(PaymentsDatabase.queryLong("SELECT count(*) FROM retrysafe_record WHERE idem_key = ?", key))
                .as("the claimed key rolled back with the work").isZero();

        try (ServiceProcess second = start(dir, "second")) {
            int port = second.awaitReady(START);

            HttpResponse<String> retry = http.send(pay(port, key, account), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> again = http.send(pay(port, key, account), HttpResponse.BodyHandlers.ofString());

            assertThat(retry.statusCode()).as(second.log()).isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
            assertThat(again.statusCode()).isEqualTo(201);
            assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(again.body()).isEqualTo(retry.body());
        }
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }
}
