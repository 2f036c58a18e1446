package io.retrysafe.examples.paymentsreactive;

import java.net.URI;
import java.security.Principal;
import java.time.Instant;
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

    record PaymentCreated(UUID id, String account, long amount, long balance, Instant createdAt) {
    }

    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    Mono<ResponseEntity<?>> create(@RequestBody PaymentRequest request, Principal principal) {
        String invalid = request.invalidReason();
        if (invalid != null) {
            return Mono.just(Problems.invalidRequest(invalid));
        }
        return payments.pay(principal.getName(), request).map(PaymentsController::answer);
    }

    private static ResponseEntity<?> answer(Ledger.Booking booking) {
        if (booking instanceof Ledger.Booked b) {
            return ResponseEntity.created(URI.create("/payments/" + b.paymentId()))
                    .body(new PaymentCreated(b.paymentId(), b.account(), b.amount(), b.balance(), b.createdAt()));
        }
        if (booking instanceof Ledger.InsufficientFunds refused) {
            return Problems.insufficientFunds(refused);
        }
        return Problems.unknownAccount(((Ledger.UnknownAccount) booking).account());
    }

    @GetMapping("/{id}")
    Mono<ResponseEntity<?>> get(@PathVariable String id, Principal principal) {
        UUID uuid;
        try {
            uuid = UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            return Mono.just(Problems.notFound("there is no payment " + id));
        }
        return payments.find(principal.getName(), uuid).<ResponseEntity<?>>map(ResponseEntity::ok)
                .defaultIfEmpty(Problems.notFound("there is no payment " + id));
    }
}
