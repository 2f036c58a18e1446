package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.spring.Idempotent;
import java.time.Instant;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Order payments, keyed by the order number (a natural key): an order is paid once, and a refusal for
 * want of money is the order's answer until its key expires.
 */
@Service
public class OrderPayments {
    private final AccountRepository accounts;
    private final PaymentRepository payments;
    private final OrderPaymentRepository orders;

    OrderPayments(AccountRepository accounts, PaymentRepository payments, OrderPaymentRepository orders) {
        this.accounts = accounts;
        this.payments = payments;
        this.orders = orders;
    }

    /** The answer to {@code PUT /orders/{orderNumber}/payment}, stored and returned to every retry. */
    public record OrderReceipt(String orderNumber, UUID paymentId, String account, long amount, Instant paidAt) {
    }

    /** {@code {"account":"acc-1","amount":2500}}. */
    public record OrderPaymentRequest(String account, long amount) {
    }

    /**
     * Records the order's payment, then debits the account. {@link InsufficientFundsException} is the
     * order's answer: RetrySafe stores it with the key and throws it again to every retry, and discards
     * the payment entities saved before it. {@code noRollbackFor} leaves that to RetrySafe: with JPA,
     * a rollback-only mark cannot be taken back, and it would discard the stored refusal too.
     */
    @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED,
            replayedExceptions = InsufficientFundsException.class)
    @Transactional(noRollbackFor = InsufficientFundsException.class)
    public OrderReceipt pay(String payer, String orderNumber, OrderPaymentRequest request) {
        Account account = accounts.lock(request.account())
                .orElseThrow(() -> new IllegalArgumentException("there is no account " + request.account()));
        Payment payment = payments.save(new Payment(payer, account.id(), request.amount()));
        orders.save(new OrderPayment(orderNumber, payment.id()));
        account.debit(request.amount());
        payments.flush();
        return new OrderReceipt(orderNumber, payment.id(), account.id(), payment.amount(), payment.createdAt());
    }
}
