package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import reactor.core.publisher.Mono;

/** Payments by {@code POST /payments}. */
@Service
public class Payments {
    private final Ledger ledger;
    private final DatabaseClient db;

    Payments(Ledger ledger, DatabaseClient db) {
        this.ledger = ledger;
        this.db = db;
    }

    /**
     * Joins the R2DBC transaction the RetrySafe filter opened for the request (key, these writes and
     * the stored response commit together); starts its own when RetrySafe is switched off.
     */
    @Transactional
    public Mono<Booking> pay(String payer, PaymentRequest request) {
        return ledger.book(payer, request.account(), request.amount());
    }

    /** The caller's own payment; another user's is not found. */
    public Mono<PaymentView> find(String payer, UUID id) {
        return db.sql("SELECT id, account, amount, created_at FROM payment WHERE id = :id AND payer = :payer")
                .bind("id", id).bind("payer", payer)
                .map(row -> new PaymentView(row.get(0, UUID.class), row.get(1, String.class), row.get(2, Long.class),
                        row.get(3, OffsetDateTime.class).toInstant()))
                .one();
    }

    record PaymentView(UUID id, String account, long amount, Instant createdAt) {
    }
}
