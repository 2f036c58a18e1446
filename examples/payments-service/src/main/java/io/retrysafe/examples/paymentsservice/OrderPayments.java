package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import io.retrysafe.spring.Idempotent;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.UUID;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Order payments, keyed by the order number the request already carries (a natural key): an order
 * is paid once, whoever retries and however often. Off with {@code payments.orders.enabled=false}: a
 * service that writes its keys last ({@code retrysafe.store.key-order=last}) may have no {@code @Idempotent}
 * method, so the load scripts switch orders off to measure that order on {@code POST /payments}.
 */
@Service
@ConditionalOnProperty(name = "payments.orders.enabled", matchIfMissing = true)
public class OrderPayments {
    private final Ledger ledger;
    private final JdbcTemplate jdbc;

    OrderPayments(Ledger ledger, JdbcTemplate jdbc) {
        this.ledger = ledger;
        this.jdbc = jdbc;
    }

    /** The answer to {@code PUT /orders/{orderNumber}/payment}, stored and returned to every retry. */
    public record OrderReceipt(String orderNumber, UUID paymentId, String account, long amount, Instant paidAt) {
    }

    /** {@code {"account":"acc-1","amount":2500}}. */
    public record OrderPaymentRequest(String account, Long amount) {
    }

    /**
     * Books the order's payment once. The key is the order number; the fingerprint covers every
     * argument, the payer included, so a retry with another amount, or another user paying the same
     * order, is refused (422) and never sees this receipt. The key, the booking and the stored receipt
     * commit in one transaction. A refusal (402, 404, 400) is an exception: nothing is stored, and the
     * order can be paid later, once the money is there.
     *
     * <p>An order number is global by nature (any user may pay an order once), so its keys are shared by
     * every caller ({@code Scope.SHARED}) rather than scoped to the caller (the default): the payer in the
     * fingerprint is what keeps another user from ever being answered with this receipt.
     */
    @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED)
    @Transactional
    public OrderReceipt pay(String payer, String orderNumber, OrderPaymentRequest request) {
        String invalid = new PaymentRequest(request.account(), request.amount()).invalidReason();
        if (invalid != null) {
            throw new Problems.ProblemException(PaymentProblems.invalidRequest(invalid));
        }
        Booking booking = ledger.book(payer, request.account(), request.amount());
        if (booking instanceof Booking.InsufficientFunds refused) {
            throw new Problems.ProblemException(PaymentProblems.insufficientFunds(refused));
        }
        if (booking instanceof Booking.UnknownAccount unknown) {
            throw new Problems.ProblemException(PaymentProblems.unknownAccount(unknown.account()));
        }
        Booking.Booked booked = (Booking.Booked) booking;
        try {
            jdbc.update("INSERT INTO order_payment (order_number, payment) VALUES (?, ?)", orderNumber,
                    booked.paymentId());
        } catch (DuplicateKeyException e) {
            // Reached only without RetrySafe, or after the key expired: the table still pays an order once.
            throw new Problems.ProblemException(PaymentProblems.response(409, "order-already-paid", "Order already paid",
                    "order " + orderNumber + " is already paid"));
        }
        return new OrderReceipt(orderNumber, booked.paymentId(), booked.account(), booked.amount(), booked.createdAt());
    }

    /** The order's receipt, for the user who paid it. */
    public Optional<OrderReceipt> find(String payer, String orderNumber) {
        return jdbc.query("SELECT o.order_number, p.id, p.account, p.amount, p.created_at FROM order_payment o"
                + " JOIN payment p ON p.id = o.payment WHERE o.order_number = ? AND p.payer = ?",
                (rs, n) -> new OrderReceipt(rs.getString(1), rs.getObject(2, UUID.class), rs.getString(3), rs.getLong(4),
                        rs.getObject(5, OffsetDateTime.class).toInstant()), orderNumber, payer).stream().findFirst();
    }
}
