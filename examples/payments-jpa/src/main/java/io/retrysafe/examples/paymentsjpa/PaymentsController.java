package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.security.Principal;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /payments} needs an {@code Idempotency-Key} (route in {@code application.yml}), answered
 * by the RetrySafe filter for retries; {@code PUT /orders/{orderNumber}/payment} is keyed by the order
 * number ({@code @Idempotent} on {@link OrderPayments#pay}).
 */
@RestController
class PaymentsController {
    private final Payments payments;
    private final OrderPayments orders;

    PaymentsController(Payments payments, OrderPayments orders) {
        this.payments = payments;
        this.orders = orders;
    }

    @PostMapping(path = "/payments", consumes = MediaType.APPLICATION_JSON_VALUE)
    ResponseEntity<?> create(@RequestBody PaymentRequest request, Principal principal) {
        String invalid = request.invalidReason();
        if (invalid != null) {
            return PaymentProblems.invalidRequest(invalid);
        }
        return PaymentProblems.answer(payments.pay(principal.getName(), request));
    }

    @PutMapping(path = "/orders/{orderNumber}/payment", consumes = MediaType.APPLICATION_JSON_VALUE)
    OrderPayments.OrderReceipt payOrder(@PathVariable String orderNumber,
            @RequestBody OrderPayments.OrderPaymentRequest request, Principal principal) {
        return orders.pay(principal.getName(), orderNumber, request);
    }

    /** The same {@code 402} for the refusal and for each of its replays. */
    @ExceptionHandler(InsufficientFundsException.class)
    ResponseEntity<ProblemDetail> insufficientFunds(InsufficientFundsException e) {
        return PaymentProblems.insufficientFunds(
                new Booking.InsufficientFunds(e.getAccount(), e.getBalance(), e.getAmount()));
    }
}
