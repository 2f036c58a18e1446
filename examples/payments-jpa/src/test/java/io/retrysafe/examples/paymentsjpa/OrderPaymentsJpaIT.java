package io.retrysafe.examples.paymentsjpa;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.queryLong;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.update;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * {@code @Idempotent} on a Spring Data JPA service: a declared refusal is stored with the key and
 * replayed, and the entities the method saved before it (persisted, not yet flushed) never commit.
 */
class OrderPaymentsJpaIT extends JpaServiceITSupport {

    @Autowired
    TestBeans.Caller caller;

    @Autowired
    TestBeans.MarksRollbackOnly marksRollbackOnly;

    private HttpResponse<String> payOrder(String orderNumber, String account, long amount) throws Exception {
        return client.send(client.request(target.firstUser(), "/orders/" + orderNumber + "/payment")
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString("{\"account\":\"" + account + "\",\"amount\":" + amount + "}")));
    }

    private static long orderPayments(String orderNumber) throws Exception {
        return queryLong("SELECT count(*) FROM order_payment WHERE order_number = ?", orderNumber);
    }

    @Test
    void aRefusalIsReplayedAndThePaymentSavedBeforeItIsNotCommitted() throws Exception {
        String account = newAccount(50);
        String order = "order-" + UUID.randomUUID();

        HttpResponse<String> refused = payOrder(order, account, 100);

        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(402);
        assertThat(refused.body()).contains("\"balance\":50");
        assertThat(payments(account)).as("payments of the refused order").isZero();
        assertThat(orderPayments(order)).isZero();
        assertThat(balance(account)).isEqualTo(50);

        // The money arrives; the refusal is still the order's answer, and the method does not run.
        update("UPDATE account SET balance = 1000 WHERE id = ?", account);
        HttpResponse<String> retry = payOrder(order, account, 100);

        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(402);
        assertThat(retry.body()).isEqualTo(refused.body());
        assertThat(payments(account)).isZero();
        assertThat(balance(account)).isEqualTo(1000);
    }

    @Test
    void anOrderIsPaidOnceAndItsRetryGetsTheSameReceipt() throws Exception {
        String account = newAccount(1_000);
        String order = "order-" + UUID.randomUUID();

        HttpResponse<String> paid = payOrder(order, account, 100);
        HttpResponse<String> retry = payOrder(order, account, 100);

        assertThat(paid.statusCode()).as(paid.body()).isEqualTo(200);
        assertThat(paid.body()).contains("\"paidAt\":");
        assertThat(retry.body()).isEqualTo(paid.body());
        assertThat(payments(account)).isEqualTo(1);
        assertThat(orderPayments(order)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(900);
    }

    @Test
    void inTheCallersTransactionARefusalDiscardsTheMethodsEntitiesAndKeepsTheCallers() throws Exception {
        String own = newAccount(10);
        String account = newAccount(50);
        String order = "order-" + UUID.randomUUID();

        InsufficientFundsException refused = caller.payOwnThenOrder("alice", own, order,
                new OrderPayments.OrderPaymentRequest(account, 100));

        assertThat(refused).isNotNull();
        assertThat(refused.getBalance()).isEqualTo(50);
        // The caller's own payment and debit, saved before the call, committed; the order's did not.
        assertThat(payments(own)).isEqualTo(1);
        assertThat(balance(own)).isEqualTo(9);
        assertThat(payments(account)).isZero();
        assertThat(orderPayments(order)).isZero();
        // The refusal committed with the caller's transaction: a retry gets it without running the method.
        update("UPDATE account SET balance = 1000 WHERE id = ?", account);
        HttpResponse<String> retry = payOrder(order, account, 100);
        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(402);
        assertThat(retry.body()).contains("\"balance\":50");
        assertThat(payments(account)).isZero();
    }

    @Test
    void aRefusalThatMarkedTheTransactionRollbackOnlyIsNotStoredAndSaysWhy() throws Exception {
        String account = newAccount(50);
        String order = "order-" + UUID.randomUUID();

        for (int call = 1; call <= 2; call++) {
            assertThatThrownBy(() -> marksRollbackOnly.pay(order, account, 100))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("marked the JPA transaction rollback-only for it")
                    .hasMessageContaining("@Transactional(noRollbackFor = InsufficientFundsException.class)")
                    .hasCauseInstanceOf(InsufficientFundsException.class);
            // Nothing was stored: every call runs, and none leaves a payment.
            assertThat(marksRollbackOnly.runs()).isEqualTo(call);
            assertThat(payments(account)).isZero();
        }
    }
}
