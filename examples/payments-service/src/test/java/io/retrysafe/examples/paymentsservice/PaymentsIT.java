package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentsservice.ServiceDatabase.balance;
import static io.retrysafe.examples.paymentsservice.ServiceDatabase.ledgerEntries;
import static io.retrysafe.examples.paymentsservice.ServiceDatabase.newAccount;
import static io.retrysafe.examples.paymentsservice.ServiceDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code POST /payments} with {@code Idempotency-Key}: every row of the HTTP table, as a client sees it. */
class PaymentsIT extends ServiceITSupport {

    private static String key() {
        return UUID.randomUUID().toString();
    }

    @Test
    void aNewKeyRunsThePaymentAnd201sWithItsLocation() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> created = send(postPayment(ALICE, key(), payment(account, 100)));

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(created.headers().firstValue("Content-Type")).hasValue("application/json");
        String location = created.headers().firstValue("Location").orElseThrow();
        assertThat(location).matches("/payments/[0-9a-f-]{36}");
        assertThat(created.body()).contains("\"id\":\"" + location.substring("/payments/".length()) + "\"",
                "\"account\":\"" + account + "\"", "\"amount\":100", "\"balance\":9900");
        assertThat(payments(account)).isEqualTo(1);
        assertThat(ledgerEntries(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);

        HttpResponse<String> read = get(ALICE, location);
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).contains("\"amount\":100");
    }

    @Test
    void aRetryIsReplayedIdenticallyAndChargesOnce() throws Exception {
        String account = newAccount(10_000);
        String key = key();

        HttpResponse<String> first = send(postPayment(ALICE, key, payment(account, 100)));
        HttpResponse<String> retry = send(postPayment(ALICE, key, payment(account, 100)));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aClientReserialisingTheSameIntentIsReplayed() throws Exception {
        String account = newAccount(10_000);
        String key = key();
        HttpResponse<String> first = send(postPayment(ALICE, key, payment(account, 100)));

        // Other member order, white space and a member outside json-members [/account, /amount].
        HttpResponse<String> retry = send(postPayment(ALICE, key,
                "{ \"note\": \"retry from the mobile app\", \"amount\": 100, \"account\": \"" + account + "\" }"));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(payments(account)).isEqualTo(1);
    }

    @Test
    void aDuplicateWhileTheFirstIsInFlightIs409WithRetryAfter() throws Exception {
        String account = newAccount(10_000);
        String key = key();
        try (HoldingFilter.Hold hold = HoldingFilter.hold(key)) {
            CompletableFuture<HttpResponse<String>> first = http.sendAsync(
                    postPayment(ALICE, key, payment(account, 100)).header(HoldingFilter.HEADER, key).build(),
                    HttpResponse.BodyHandlers.ofString());
            hold.awaitArrived(); // inside its transaction, key claimed, nothing committed

            HttpResponse<String> duplicate = send(postPayment(ALICE, key, payment(account, 100)));

            assertThat(duplicate.statusCode()).isEqualTo(409);
            assertThat(duplicate.headers().firstValue("Retry-After")).hasValueSatisfying(
                    v -> assertThat(Long.parseLong(v)).isPositive());
            assertThat(duplicate.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(duplicate.body()).contains("\"type\":\"/problems/request-in-progress\"", "\"status\":409");
            assertThat(payments(account)).isZero();

            hold.release();
            HttpResponse<String> firstAnswer = first.get(60, TimeUnit.SECONDS);
            assertThat(firstAnswer.statusCode()).isEqualTo(201);
            assertThat(firstAnswer.headers().firstValue("Idempotent-Replayed")).isEmpty();

            HttpResponse<String> retry = send(postPayment(ALICE, key, payment(account, 100)));
            assertThat(retry.statusCode()).isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(retry.body()).isEqualTo(firstAnswer.body());
        }
        assertThat(payments(account)).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherBodyIs422AndChargesNothingMore() throws Exception {
        String account = newAccount(10_000);
        String key = key();
        send(postPayment(ALICE, key, payment(account, 100)));

        HttpResponse<String> other = send(postPayment(ALICE, key, payment(account, 999)));

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aMissingKeyIs400AndChargesNothing() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> refused = send(postPayment(ALICE, null, payment(account, 100)));

        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"type\":\"/problems/missing-key\"");
        assertThat(payments(account)).isZero();
    }

    @Test
    void aMalformedKeyIs400AndChargesNothing() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> twoValues = send(postPayment(ALICE, key(), payment(account, 100))
                .header("Idempotency-Key", key()));
        HttpResponse<String> empty = send(postPayment(ALICE, "\"\"", payment(account, 100)));

        assertThat(twoValues.statusCode()).isEqualTo(400);
        assertThat(twoValues.body()).contains("\"type\":\"/problems/invalid-key\"", "\"rule\":\"multiple_values\"");
        assertThat(empty.statusCode()).isEqualTo(400);
        assertThat(empty.body()).contains("\"type\":\"/problems/invalid-key\"");
        assertThat(payments(account)).isZero();
    }

    @Test
    void aBodyOverTheFingerprintBoundIs413AndChargesNothing() throws Exception {
        String account = newAccount(10_000);
        // retrysafe.http.max-request-bytes is 1 MiB: pad a valid payment past it.
        String padded = "{\"account\":\"" + account + "\",\"amount\":100,\"note\":\"" + "x".repeat(1024 * 1024) + "\"}";

        HttpResponse<String> refused = send(postPayment(ALICE, key(), padded));

        assertThat(refused.statusCode()).isEqualTo(413);
        assertThat(refused.body()).contains("\"type\":\"/problems/request-too-large\"");
        assertThat(payments(account)).isZero();
    }

    @Test
    void aBodyThatIsNotJsonIs400() throws Exception {
        HttpResponse<String> refused = send(postPayment(ALICE, key(), "{\"account\":"));

        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(refused.body()).contains("\"type\":\"/problems/malformed-json\"");
    }

    @Test
    void withoutCredentialsIs401AndChargesNothing() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> anonymous = send(postPayment(null, key(), payment(account, 100)));
        HttpResponse<String> wrongPassword = send(postPayment(null, key(), payment(account, 100))
                .header("Authorization", basic(ALICE, "wrong")));

        for (HttpResponse<String> r : List.of(anonymous, wrongPassword)) {
            assertThat(r.statusCode()).isEqualTo(401);
            assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Basic realm=\"payments\"");
            assertThat(r.body()).contains("\"type\":\"/problems/unauthenticated\"");
        }
        assertThat(payments(account)).isZero();
    }

    @Test
    void insufficientFundsIs402AndTheRefusalIsReplayed() throws Exception {
        String account = newAccount(50);
        String key = key();

        HttpResponse<String> refused = send(postPayment(ALICE, key, payment(account, 100)));
        ServiceDatabase.update("UPDATE account SET balance = 1000 WHERE id = ?", account);
        HttpResponse<String> retry = send(postPayment(ALICE, key, payment(account, 100)));

        assertThat(refused.statusCode()).isEqualTo(402);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.body()).contains("\"type\":\"/problems/insufficient-funds\"", "\"balance\":50");
        // The refusal was the answer to this intent: a retry gets it again, even though the money is there now.
        assertThat(retry.statusCode()).isEqualTo(402);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(refused.body());
        assertThat(payments(account)).isZero();

        HttpResponse<String> newIntent = send(postPayment(ALICE, key(), payment(account, 100)));
        assertThat(newIntent.statusCode()).isEqualTo(201);
    }

    @Test
    void aKeyBelongsToItsUser() throws Exception {
        String account = newAccount(10_000);
        String key = key();

        HttpResponse<String> alice = send(postPayment(ALICE, key, payment(account, 100)));
        HttpResponse<String> bob = send(postPayment(BOB, key, payment(account, 100)));

        assertThat(alice.statusCode()).isEqualTo(201);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(bob.headers().firstValue("Location")).isNotEqualTo(alice.headers().firstValue("Location"));
        assertThat(payments(account)).isEqualTo(2);
        // Nor can bob read alice's payment.
        assertThat(get(BOB, alice.headers().firstValue("Location").orElseThrow()).statusCode()).isEqualTo(404);
        assertThat(get(ALICE, alice.headers().firstValue("Location").orElseThrow()).statusCode()).isEqualTo(200);
    }

    @Test
    void sixtyFourConcurrentDuplicatesChargeOnceAndAgreeOnTheAnswer() throws Exception {
        String account = newAccount(10_000);
        String key = key();
        int n = 64;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<HttpResponse<String>> answers = new ArrayList<>();
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<HttpResponse<String>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return send(postPayment(ALICE, key, payment(account, 100)));
                }));
            }
            start.countDown();
            for (Future<HttpResponse<String>> f : futures) {
                answers.add(f.get(120, TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
        List<HttpResponse<String>> created = answers.stream().filter(r -> r.statusCode() == 201).toList();
        assertThat(answers).allSatisfy(r -> assertThat(r.statusCode()).isIn(201, 409));
        assertThat(created).isNotEmpty();
        assertThat(created).extracting(HttpResponse::body).containsOnly(created.get(0).body());
        assertThat(created.stream().filter(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty()))
                .as("answers that ran the payment").hasSize(1);
        assertThat(answers.stream().filter(r -> r.statusCode() == 409))
                .allSatisfy(r -> assertThat(r.headers().firstValue("Retry-After")).isPresent());
    }
}
