package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.PaymentProblems;
import java.security.Principal;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code PUT /orders/{orderNumber}/payment}: no header needed, the order number is the key
 * ({@code @Idempotent} on {@link OrderPayments#pay}). Every retry gets the same receipt, with 200.
 */
@RestController
@ConditionalOnProperty(name = "payments.orders.enabled", matchIfMissing = true)
@RequestMapping("/orders/{orderNumber}/payment")
class OrdersController {
    private final OrderPayments orders;

    OrdersController(OrderPayments orders) {
        this.orders = orders;
    }

    @PutMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    OrderPayments.OrderReceipt pay(@PathVariable String orderNumber,
            @RequestBody OrderPayments.OrderPaymentRequest request, Principal principal) {
        return orders.pay(principal.getName(), orderNumber, request);
    }

    @GetMapping
    ResponseEntity<?> get(@PathVariable String orderNumber, Principal principal) {
        return orders.find(principal.getName(), orderNumber).<ResponseEntity<?>>map(ResponseEntity::ok)
                .orElseGet(() -> PaymentProblems.notFound("order " + orderNumber + " has no payment of yours"));
    }
}
