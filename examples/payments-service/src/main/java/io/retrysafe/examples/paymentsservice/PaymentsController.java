package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.security.Principal;
import java.util.UUID;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /payments} needs an {@code Idempotency-Key} (route in {@code application.yml}): the
 * RetrySafe filter answers retries, duplicates in flight and reused keys before this controller
 * runs, and stores whatever it answers, refusals included (402, 404, 400), for the key's retries.
 */
@RestController
@RequestMapping("/payments")
class PaymentsController {
    private final Payments payments;

    PaymentsController(Payments payments) {
        this.payments = payments;
    }

    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    ResponseEntity<?> create(@RequestBody PaymentRequest request, Principal principal) {
        String invalid = request.invalidReason();
        if (invalid != null) {
            return PaymentProblems.invalidRequest(invalid);
        }
        return PaymentProblems.answer(payments.pay(principal.getName(), request));
    }

    @GetMapping("/{id}")
    ResponseEntity<?> get(@PathVariable String id, Principal principal) {
        UUID uuid;
        try {
            uuid = UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            return PaymentProblems.notFound("there is no payment " + id);
        }
        return payments.find(principal.getName(), uuid).<ResponseEntity<?>>map(ResponseEntity::ok)
                .orElseGet(() -> PaymentProblems.notFound("there is no payment " + id));
    }
}
