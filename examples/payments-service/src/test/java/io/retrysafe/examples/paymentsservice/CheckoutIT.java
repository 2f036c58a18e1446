package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import io.retrysafe.examples.paymentsservice.provider.ProviderAdmin;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * {@code POST /checkouts} as a client sees it, on the service with its in-process payment provider (no
 * {@code payments.provider.url}): the phased engine's answers, the filter's problems, the provider's own count.
 */
class CheckoutIT extends ServiceITSupport {
    @Autowired
    PaymentProvider inProcess;

    ProviderAdmin provider;

    @BeforeEach
    void provider() {
        provider = new ProviderAdmin(inProcess.url());
    }

    private HttpRequest.Builder post(String user, CheckoutIntent intent) {
        return postCheckout(user, intent.key(), intent.body());
    }

    @Test
    void aCheckoutChargesOnceAndItsRetryReplaysTheAnswer() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(2_500);

        HttpResponse<String> first = send(post(ALICE, intent));
        HttpResponse<String> retry = send(post(ALICE, intent));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(first.headers().firstValue("Location")).hasValueSatisfying(l -> assertThat(l).startsWith("/payments/"));
        assertThat(first.body()).contains("\"status\":\"completed\"", "\"amount\":2500", "\"balance\":7500");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.body()).isEqualTo(first.body());

        assertThat(provider.chargesOf(intent.card())).hasSize(1);
        assertThat(payments(intent.account())).isEqualTo(1);
        assertThat(balance(intent.account())).isEqualTo(7_500);
        assertThat(ServiceDatabase.holds(intent.account(), "BOOKED")).isEqualTo(1);
        // The booked payment is the caller's, as any other.
        assertThat(get(ALICE, first.headers().firstValue("Location").orElseThrow()).statusCode()).isEqualTo(200);
    }

    @Test
    void theSameKeyWithAnotherBodyIs422() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(100);
        assertThat(send(post(ALICE, intent)).statusCode()).isEqualTo(201);

        HttpResponse<String> reused = send(postCheckout(ALICE, intent.key(),
                checkout(intent.account(), 200, intent.card())));

        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(reused.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(provider.chargesOf(intent.card())).hasSize(1);
        assertThat(payments(intent.account())).isEqualTo(1);
    }

    @Test
    void aDeclinedCardIs402StoredForTheKeyAndTheHoldIsReleased() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(1_000, PaymentProvider.DECLINED_CARD);

        HttpResponse<String> declined = send(post(ALICE, intent));
        HttpResponse<String> retry = send(post(ALICE, intent));

        assertThat(declined.statusCode()).as(declined.body()).isEqualTo(402);
        assertThat(declined.body()).contains("\"type\":\"/problems/payment-declined\"", "\"code\":\"card_declined\"");
        assertThat(retry.statusCode()).isEqualTo(402);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(declined.body());
        assertThat(payments(intent.account())).isZero();
        assertThat(balance(intent.account())).isEqualTo(CheckoutIntent.BALANCE);
        assertThat(ServiceDatabase.holds(intent.account(), "RELEASED")).isEqualTo(1);
    }

    @Test
    void aMissingKeyIs400AndNothingIsCharged() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(100);

        HttpResponse<String> refused = send(postCheckout(ALICE, null, intent.body()));

        assertThat(refused.statusCode()).isEqualTo(400);
        assertThat(refused.body()).contains("\"type\":\"/problems/missing-key\"");
        assertThat(provider.chargesOf(intent.card())).isEmpty();
        assertThat(ServiceDatabase.holds(intent.account(), null)).isZero();
    }

    @Test
    void aBodyThatIsNotACheckoutIs400AndClaimsNothing() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(100);
        String fraction = "{\"account\":\"" + intent.account() + "\",\"amount\":25.5,\"card\":\"" + intent.card() + "\"}";

        HttpResponse<String> notJson = send(postCheckout(ALICE, intent.key(), "{\"account\":"));
        HttpResponse<String> notWhole = send(postCheckout(ALICE, intent.key(), fraction));
        HttpResponse<String> valid = send(post(ALICE, intent));

        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(notJson.body()).contains("\"type\":\"/problems/malformed-json\"");
        assertThat(notWhole.statusCode()).isEqualTo(400);
        assertThat(notWhole.body()).contains("\"type\":\"/problems/invalid-request\"", "amount must be a whole number");
        assertThat(valid.statusCode()).as("the key was not claimed by the refused bodies").isEqualTo(201);
    }

    @Test
    void anotherUsersKeyDoesNotReplay() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(300);

        HttpResponse<String> alice = send(post(ALICE, intent));
        HttpResponse<String> bob = send(post(BOB, intent));

        assertThat(alice.statusCode()).isEqualTo(201);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(bob.headers().firstValue("Location")).isNotEqualTo(alice.headers().firstValue("Location"));
        assertThat(provider.chargesOf(intent.card())).as("each caller's key is derived apart").hasSize(2);
        assertThat(payments(intent.account())).isEqualTo(2);
    }

    @Test
    void aFailingProviderIs503UnstoredAndTheRetryChargesOnce() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(400);
        provider.fault("fail", 1, 0, intent.card());

        HttpResponse<String> failed = send(post(ALICE, intent));
        HttpResponse<String> retry = send(post(ALICE, intent));

        assertThat(failed.statusCode()).isEqualTo(503);
        assertThat(failed.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(failed.body()).contains("\"type\":\"/problems/upstream-unavailable\"");
        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(provider.chargesOf(intent.card())).hasSize(1);
        assertThat(payments(intent.account())).isEqualTo(1);
        assertThat(ServiceDatabase.holds(intent.account(), null)).as("the retry resumed after the saved hold")
                .isEqualTo(1);
    }

    @Test
    void aCheckoutInFlightIs409ForItsDuplicate() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(500);
        provider.fault("slow", 1, 1, intent.card()); // under the service's 2 s time-out

        CompletableFuture<HttpResponse<String>> first = http.sendAsync(post(ALICE, intent).build(),
                HttpResponse.BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(30)).until(() -> provider.held(intent.card()) > 0);
        HttpResponse<String> duplicate = send(post(ALICE, intent));

        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(duplicate.headers().firstValue("Retry-After")).isPresent();
        assertThat(duplicate.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(first.get().statusCode()).isEqualTo(201);
        assertThat(provider.chargesOf(intent.card())).hasSize(1);
    }

    @Test
    void aProviderThatDoesNotAnswerIs503OutcomeUnknownAndTheKeyStaysInProgress() throws Exception {
        CheckoutIntent intent = CheckoutIntent.fresh(600);
        provider.fault("hang", 1, 5, intent.card()); // charged, and answered after the service's 2 s time-out

        HttpResponse<String> unknown = send(post(ALICE, intent));
        HttpResponse<String> retry = send(post(ALICE, intent));

        assertThat(unknown.statusCode()).as(unknown.body()).isEqualTo(503);
        assertThat(unknown.body()).contains("\"type\":\"/problems/outcome-unknown\"");
        assertThat(unknown.headers().firstValue("Retry-After")).isPresent();
        assertThat(retry.statusCode()).as("in progress until the lease ends").isEqualTo(409);
        assertThat(retry.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(provider.chargesOf(intent.card())).hasSize(1);
        assertThat(payments(intent.account())).isZero();
        assertThat(ServiceDatabase.holds(intent.account(), "HELD")).isEqualTo(1);
    }
}
