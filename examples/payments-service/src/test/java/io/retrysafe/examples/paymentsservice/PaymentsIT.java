package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.ledgerEntries;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.HttpConformance;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /payments} with {@code Idempotency-Key}: every row of the HTTP table, as a client sees it.
 * The rows every stack answers alike are the shared conformance suite ({@link Conformance}); the cases
 * here are what only this service has: its ledger, {@code GET /payments/{id}}, a member outside the
 * fingerprint and its realm.
 */
class PaymentsIT extends ServiceITSupport {

    /** The suite every stack passes, against this service. */
    @Nested
    class Conformance extends HttpConformance {
        @Override
        protected ConformanceTarget target() {
            return new ServiceTarget(port);
        }
    }

    private static String key() {
        return UUID.randomUUID().toString();
    }

    @Test
    void aPaymentIsBookedOnceInTheLedgerAndItsLocationReadsIt() throws Exception {
        String account = newAccount(10_000);
        String key = key();

        HttpResponse<String> created = send(postPayment(ALICE, key, payment(account, 100)));
        send(postPayment(ALICE, key, payment(account, 100)));

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(payments(account)).isEqualTo(1);
        assertThat(ledgerEntries(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
        HttpResponse<String> read = get(ALICE, created.headers().firstValue("Location").orElseThrow());
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).contains("\"amount\":100");
    }

    @Test
    void aMemberOutsideTheFingerprintIsNotANewIntent() throws Exception {
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
    void withoutCredentialsOrWithAWrongPasswordIs401InThePaymentsRealm() throws Exception {
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
    void aUserCannotReadAnotherUsersPayment() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> alice = send(postPayment(ALICE, key(), payment(account, 100)));
        String location = alice.headers().firstValue("Location").orElseThrow();

        assertThat(get(BOB, location).statusCode()).isEqualTo(404);
        assertThat(get(ALICE, location).statusCode()).isEqualTo(200);
    }
}
