package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Payments by {@code POST /payments}. */
@Service
public class Payments {
    private final Ledger ledger;
    private final JdbcTemplate jdbc;

    Payments(Ledger ledger, JdbcTemplate jdbc) {
        this.ledger = ledger;
        this.jdbc = jdbc;
    }

    /**
     * Joins the transaction the RetrySafe filter opened for the request (key, these writes and the
     * stored response commit together); starts its own when RetrySafe is switched off.
     */
    @Transactional
    public Booking pay(String payer, PaymentRequest request) {
        return ledger.book(payer, request.account(), request.amount());
    }

    /** The caller's own payment; another user's is not found. */
    public Optional<PaymentView> find(String payer, UUID id) {
        return jdbc.query("SELECT id, account, amount, created_at FROM payment WHERE id = ? AND payer = ?",
                (rs, n) -> new PaymentView(rs.getObject(1, UUID.class), rs.getString(2), rs.getLong(3),
                        rs.getObject(4, OffsetDateTime.class).toInstant()), id, payer).stream().findFirst();
    }

    record PaymentView(UUID id, String account, long amount, Instant createdAt) {
    }
}
