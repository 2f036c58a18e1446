package io.retrysafe.examples.paymentsjpa;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.queryLong;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.HttpConformance;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * {@code POST /payments} on JPA entities, in transactional mode on Boot's {@code JpaTransactionManager}:
 * the shared conformance suite, and that the key, the entities and the stored answer commit or roll
 * back together.
 */
class PaymentsJpaIT extends JpaServiceITSupport {

    /** The suite every stack passes, against this service. */
    @Nested
    class Conformance extends HttpConformance {
        @Override
        protected ConformanceTarget target() {
            return target;
        }
    }

    private static long accountVersion(String account) throws Exception {
        return queryLong("SELECT version FROM account WHERE id = ?", account);
    }

    @Test
    void aHandlerFailingAfterSavingEntitiesLeavesNoEntityAndNoKey() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> failed = client.send(client.postPayment(target.firstUser(), key, payment(account, 100))
                .header(TestBeans.FAIL_AFTER_SAVE, "true"));

        assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
        assertThat(payments(account)).isZero();
        assertThat(balance(account)).isEqualTo(10_000);
        assertThat(accountVersion(account)).isEqualTo(1);

        // No key was kept: the retry runs the payment, once.
        HttpResponse<String> retry = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));

        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(handlerRuns(key)).isEqualTo(2);
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void aReplayDoesNotRunTheHandlerNorTouchTheEntities() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();
        HttpResponse<String> first = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
        long version = accountVersion(account);

        HttpResponse<String> replay = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(handlerRuns(key)).isEqualTo(1);
        assertThat(accountVersion(account)).isEqualTo(version);
        assertThat(balance(account)).isEqualTo(9_900);
    }

    @Test
    void concurrentRequestsWithOneKeyBookOnce() throws Exception {
        String account = newAccount(10_000);
        String key = UUID.randomUUID().toString();

        List<HttpResponse<String>> answers = client.sendAtOnce(6,
                () -> client.postPayment(target.firstUser(), key, payment(account, 100)));

        assertThat(answers).allSatisfy(r -> assertThat(r.statusCode()).as(r.body()).isIn(201, 409));
        assertThat(answers.stream().filter(r -> r.statusCode() == 201
                && r.headers().firstValue("Idempotent-Replayed").isEmpty())).hasSize(1);
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(9_900);
        assertThat(accountVersion(account)).isEqualTo(2);
    }
}
