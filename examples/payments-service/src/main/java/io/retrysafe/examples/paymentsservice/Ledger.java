package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.Booking.Booked;
import io.retrysafe.examples.paymentscommon.Booking.InsufficientFunds;
import io.retrysafe.examples.paymentscommon.Booking.UnknownAccount;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/** Moves money: the one place that writes account balances, payments and ledger entries. */
@Repository
class Ledger {
    private final JdbcTemplate jdbc;

    Ledger(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * Locks the account, checks the balance, debits it and records the payment and its ledger entry.
     * Runs in the caller's transaction (with RetrySafe: the one that also holds the key and will hold
     * the stored response), so all of it commits or none of it does.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public Booking book(String payer, String account, long amount) {
        List<Long> balances = jdbc.queryForList("SELECT balance FROM account WHERE id = ? FOR UPDATE", Long.class,
                account);
        if (balances.isEmpty()) {
            return new UnknownAccount(account);
        }
        long balance = balances.get(0);
        if (balance < amount) {
            return new InsufficientFunds(account, balance, amount);
        }
        return debit(jdbc, payer, account, amount, balance);
    }

    /**
     * Debits {@code amount} from {@code account}, whose row the caller locked and found at {@code balance}, and
     * records the payment and its ledger entry, on {@code jdbc}'s transaction.
     */
    static Booked debit(JdbcTemplate jdbc, String payer, String account, long amount, long balance) {
        long after = balance - amount;
        // The balance is part of the account's representation: its version (ETag) moves with it.
        jdbc.update("UPDATE account SET balance = ?, version = version + 1 WHERE id = ?", after, account);
        UUID id = UUID.randomUUID();
        Instant createdAt = jdbc.queryForObject(
                "INSERT INTO payment (id, payer, account, amount) VALUES (?, ?, ?, ?) RETURNING created_at",
                (rs, n) -> rs.getObject(1, OffsetDateTime.class).toInstant(), id, payer, account, amount);
        jdbc.update("INSERT INTO ledger (payment, account, delta, balance) VALUES (?, ?, ?, ?)", id, account, -amount,
                after);
        return new Booked(id, account, amount, after, createdAt);
    }
}
