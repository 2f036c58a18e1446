package io.retrysafe.examples.paymentscommon;

import java.time.Instant;
import java.util.UUID;

/** What a booking of a payment did; a refusal is an answer too, not an exception, so the transaction stays usable. */
public sealed interface Booking permits Booking.Booked, Booking.InsufficientFunds, Booking.UnknownAccount {

    record Booked(UUID paymentId, String account, long amount, long balance, Instant createdAt) implements Booking {
    }

    record InsufficientFunds(String account, long balance, long amount) implements Booking {
    }

    record UnknownAccount(String account) implements Booking {
    }
}
