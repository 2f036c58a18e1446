package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.client.ClientResponse;
import io.retrysafe.client.RetryingClient;
import io.retrysafe.Sleeper;
import io.retrysafe.examples.paymentstesting.TestHold;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link RetryingClient} (module retrysafe-client) against the payments service over real HTTP: an
 * answer lost on the way, a duplicate in flight, and answers that must never be retried. Whatever
 * the client meets, the caller ends with one payment and the answer that created it.
 */
class RetryingClientIT extends ServiceITSupport {
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    /** The waits the client asked for; the test decides what happens during each, and returns at once. */
    private final List<Duration> waits = new CopyOnWriteArrayList<>();

    private final HttpClient http11 = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private RetryingClient client(Sleeper during) {
        return RetryingClient.builder(http11).maxAttempts(10).maxBackoff(MAX_BACKOFF).sleeper(d -> {
            waits.add(d);
            during.sleep(d);
        }).build();
    }

    private static final Sleeper NEVER = d -> {
        throw new AssertionError("the client must not retry, but asked to wait " + d);
    };

    private HttpRequest pay(int port, String account, long amount, Duration timeout) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments")).timeout(timeout)
                .header("Authorization", basic(ALICE)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(payment(account, amount))).build();
    }

    private HttpRequest pay(String account, long amount) {
        return pay(port, account, amount, Duration.ofSeconds(60));
    }

    private String paymentId(ClientResponse<String> answer) {
        String location = answer.response().headers().firstValue("Location").orElseThrow();
        return location.substring("/payments/".length());
    }

    // ---- an answer lost on the way

    @Test
    void aConnectionCutAfterTheServiceAnsweredIsRetriedAndTheCallerGetsTheOriginalPayment() throws Exception {
        String account = newAccount(10_000);
        try (TcpProxy proxy = new TcpProxy("127.0.0.1", port)) {
            proxy.mode(TcpProxy.Mode.LOSE_RESPONSES);
            // The first attempt's payment commits, then its answer is cut on the way back; the retry goes through.
            RetryingClient client = client(d -> proxy.mode(TcpProxy.Mode.FORWARD));

            ClientResponse<String> answer = client.send(pay(proxy.port(), account, 100, Duration.ofSeconds(60)),
                    BodyHandlers.ofString());

            assertThat(proxy.lostResponses()).as("answers cut on the way back").isEqualTo(1);
            assertThat(answer.attempts()).isEqualTo(2);
            assertThat(answer.statusCode()).isEqualTo(201);
            assertThat(answer.replayed()).as("the retry got the stored answer of the first attempt").isTrue();
            assertThat(answer.body()).contains("\"account\":\"" + account + "\"", "\"amount\":100",
                    "\"balance\":9900");
            HttpResponse<String> stored = get(ALICE, "/payments/" + paymentId(answer));
            assertThat(stored.statusCode()).isEqualTo(200);
            assertThat(stored.body()).contains("\"id\":\"" + paymentId(answer) + "\"");
        }
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aFirstAttemptThatTimesOutOnTheClientIsRetriedWithTheSameKeyAndReplayed() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        try (TestHold hold = TestHold.hold(key)) {
            // The first attempt is held inside its transaction until the client has given up on it; during the
            // wait before the retry, the service finishes it and commits.
            RetryingClient client = client(d -> {
                hold.release();
                await().atMost(Duration.ofSeconds(60)).until(() -> payments(account) == 1);
            });
            // The hold header marks only the first request that reaches the service: the filter forgets it then.
            HttpRequest request = HttpRequest.newBuilder(pay(account, 100), (n, v) -> true)
                    .header(TestHold.HEADER, key).timeout(Duration.ofSeconds(2)).build();

            ClientResponse<String> answer = client.send(request, key, BodyHandlers.ofString());

            assertThat(answer.key()).isEqualTo(key);
            assertThat(answer.attempts()).isGreaterThanOrEqualTo(2);
            assertThat(answer.statusCode()).isEqualTo(201);
            assertThat(answer.replayed()).isTrue();
            assertThat(answer.body()).contains("\"account\":\"" + account + "\"", "\"balance\":9900");
        }
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    // ---- a duplicate in flight: 409 and Retry-After

    @Test
    void aDuplicateOfARequestInFlightBacksOffPerRetryAfterAndThenGetsTheReplay() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        try (TestHold hold = TestHold.hold(key)) {
            // Another attempt of the same intent (an earlier process of this client, say) is in flight.
            CompletableFuture<HttpResponse<String>> first = http.sendAsync(HttpRequest.newBuilder(
                    pay(account, 100), (n, v) -> true).header("Idempotency-Key", key)
                    .header(TestHold.HEADER, key).build(), BodyHandlers.ofString());
            hold.awaitArrived();
            List<HttpResponse<String>> firstAnswer = new ArrayList<>();
            RetryingClient client = client(d -> {
                // Backing off after the 409: the request in flight finishes meanwhile.
                hold.release();
                try {
                    firstAnswer.add(first.get(60, TimeUnit.SECONDS));
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });

            ClientResponse<String> answer = client.send(pay(account, 100), key, BodyHandlers.ofString());

            assertThat(waits).as("one back-off, after the 409").hasSize(1);
            assertThat(waits.get(0)).as("Retry-After: 1 is the floor of the wait, maxBackoff its cap")
                    .isBetween(Duration.ofSeconds(1), MAX_BACKOFF);
            assertThat(answer.attempts()).isEqualTo(2);
            assertThat(answer.statusCode()).isEqualTo(201);
            assertThat(answer.replayed()).isTrue();
            assertThat(firstAnswer.get(0).statusCode()).isEqualTo(201);
            assertThat(answer.body()).isEqualTo(firstAnswer.get(0).body());
        }
        assertThat(payments(account)).isEqualTo(1);
    }

    @Test
    void sixteenClientsSendingOneIntentAllGetTheOnePayment() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        int n = 16;
        // Real waits here: any 409 is backed off for its Retry-After.
        RetryingClient client = RetryingClient.builder(http11).maxAttempts(20).maxBackoff(Duration.ofSeconds(2))
                .build();
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<ClientResponse<String>> answers = new ArrayList<>();
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<ClientResponse<String>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return client.send(pay(account, 100), key, BodyHandlers.ofString());
                }));
            }
            start.countDown();
            for (Future<ClientResponse<String>> f : futures) {
                answers.add(f.get(180, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(answers).allSatisfy(a -> assertThat(a.statusCode()).isEqualTo(201));
        assertThat(answers).extracting(ClientResponse::body).containsOnly(answers.get(0).body());
        assertThat(answers).filteredOn(a -> !a.replayed()).as("callers whose attempt ran the payment").hasSize(1);
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    // ---- final answers

    @Test
    void aKeyReusedForAnotherPaymentIs422AndNeverRetried() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        ClientResponse<String> first = client(NEVER).send(pay(account, 100), key, BodyHandlers.ofString());

        ClientResponse<String> other = client(NEVER).send(pay(account, 999), key, BodyHandlers.ofString());

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.attempts()).isEqualTo(1);
        assertThat(other.replayed()).isFalse();
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(waits).isEmpty();
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aMalformedRequestIs400AndNeverRetried() throws Exception {
        HttpRequest malformed = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .timeout(Duration.ofSeconds(60)).header("Authorization", basic(ALICE))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"account\":")).build();

        ClientResponse<String> answer = client(NEVER).send(malformed, BodyHandlers.ofString());

        assertThat(answer.statusCode()).isEqualTo(400);
        assertThat(answer.attempts()).isEqualTo(1);
        assertThat(answer.body()).contains("\"type\":\"/problems/malformed-json\"");
        assertThat(waits).isEmpty();
    }

    @Test
    void insufficientFundsIsAFinalAnswerToo() throws Exception {
        String account = newAccount(50);

        ClientResponse<String> answer = client(NEVER).send(pay(account, 100), BodyHandlers.ofString());

        assertThat(answer.statusCode()).isEqualTo(402);
        assertThat(answer.attempts()).isEqualTo(1);
        assertThat(payments(account)).isZero();
    }
}
