package com.example.quickstart;

import java.util.UUID;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

@RestController
class PaymentsController {

    record PaymentRequest(String account, long amountCents) {
    }

    record Payment(String id, String account, long amountCents) {
    }

    // Runs once per Idempotency-Key: a retry gets this answer again, without running it.
    @PostMapping("/payments")
    @ResponseStatus(HttpStatus.CREATED)
    Payment pay(@RequestBody PaymentRequest request) {
        return new Payment(UUID.randomUUID().toString(), request.account(), request.amountCents());
    }
}
