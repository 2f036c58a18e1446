package io.retrysafe.examples.paymentsreactive;

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
import reactor.core.publisher.Mono;

/**
 * The payments API of the servlet example, answered with a {@link Mono}. The RetrySafe WebFilter has
 * already claimed the {@code Idempotency-Key} of a {@code POST /payments} (route in
 * {@code application.yml}) when this controller runs, in the R2DBC transaction the booking joins; it
 * stores the answer, a refusal too (402, 404, 400), for the key's retries.
 */
@RestController
@RequestMapping("/payments")
class PaymentsController {
    private final Payments payments;

    PaymentsController(Payments payments) {
        this.payments = payments;
    }

    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    Mono<ResponseEntity<?>> create(@RequestBody PaymentRequest request, Principal principal) {
        String invalid = request.invalidReason();
        if (invalid != null) {
            return Mono.just(PaymentProblems.invalidRequest(invalid));
        }
        return payments.pay(principal.getName(), request).map(PaymentProblems::answer);
    }

    @GetMapping("/{id}")
    Mono<ResponseEntity<?>> get(@PathVariable String id, Principal principal) {
        UUID uuid;
        try {
            uuid = UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            return Mono.just(PaymentProblems.notFound("there is no payment " + id));
        }
        return payments.find(principal.getName(), uuid).<ResponseEntity<?>>map(ResponseEntity::ok)
                .defaultIfEmpty(PaymentProblems.notFound("there is no payment " + id));
    }
}
