package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** {@code PUT /orders/{orderNumber}/payment}: the order number is the key ({@code @Idempotent}). */
class OrderPaymentsIT extends ServiceITSupport {

    private static String orderNumber() {
        return "ORD-" + UUID.randomUUID();
    }

    private HttpResponse<String> pay(String user, String orderNumber, String account, long amount) throws Exception {
        return send(request(user, "/orders/" + orderNumber + "/payment").header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(payment(account, amount))));
    }

    @Test
    void aRetryReturnsTheSameReceiptAndBooksOnce() throws Exception {
        String account = newAccount(10_000);
        String order = orderNumber();

        HttpResponse<String> first = pay(ALICE, order, account, 2_500);
        HttpResponse<String> retry = pay(ALICE, order, account, 2_500);

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.body()).contains("\"orderNumber\":\"" + order + "\"", "\"amount\":2500", "\"paymentId\":");
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(7_500);

        HttpResponse<String> read = get(ALICE, "/orders/" + order + "/payment");
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).isEqualTo(first.body());
    }

    @Test
    void anotherAmountForAPaidOrderIs422AndBooksNothing() throws Exception {
        String account = newAccount(10_000);
        String order = orderNumber();
        pay(ALICE, order, account, 2_500);

        HttpResponse<String> other = pay(ALICE, order, account, 2_600);

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(7_500);
    }

    @Test
    void anotherUserPayingTheOrderIs422AndNeverSeesTheReceipt() throws Exception {
        String account = newAccount(10_000);
        String order = orderNumber();
        HttpResponse<String> alice = pay(ALICE, order, account, 2_500);
        String paymentId = alice.body().replaceAll(".*\"paymentId\":\"([^\"]+)\".*", "$1");

        HttpResponse<String> bob = pay(BOB, order, account, 2_500);

        assertThat(bob.statusCode()).isEqualTo(422);
        assertThat(bob.body()).doesNotContain(paymentId);
        assertThat(get(BOB, "/orders/" + order + "/payment").statusCode()).isEqualTo(404);
        assertThat(payments(account)).isEqualTo(1);
    }

    @Test
    void aRefusedOrderPaymentStoresNothingAndCanBePaidLater() throws Exception {
        String account = newAccount(1_000);
        String order = orderNumber();

        HttpResponse<String> refused = pay(ALICE, order, account, 2_500);
        PaymentsDatabase.update("UPDATE account SET balance = 10000 WHERE id = ?", account);
        HttpResponse<String> later = pay(ALICE, order, account, 2_500);

        assertThat(refused.statusCode()).isEqualTo(402);
        assertThat(refused.body()).contains("\"type\":\"/problems/insufficient-funds\"");
        assertThat(later.statusCode()).isEqualTo(200);
        assertThat(payments(account)).isEqualTo(1);
        assertThat(balance(account)).isEqualTo(7_500);
    }
}
