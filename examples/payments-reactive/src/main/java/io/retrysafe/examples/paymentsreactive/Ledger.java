package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.Booking.Booked;
import io.retrysafe.examples.paymentscommon.Booking.InsufficientFunds;
import io.retrysafe.examples.paymentscommon.Booking.UnknownAccount;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import reactor.core.publisher.Mono;

/** Moves money: the one place that writes account balances, payments and ledger entries. */
@Repository
class Ledger {
    private final DatabaseClient db;

    Ledger(DatabaseClient db) {
        this.db = db;
    }

    /**
     * Locks the account, checks the balance, debits it and records the payment and its ledger entry.
     * Runs in the caller's R2DBC transaction (with RetrySafe: the one that also holds the key and will
     * hold the stored response), so all of it commits or none of it does.
     */
    @Transactional(propagation = Propagation.MANDATORY)
    public Mono<Booking> book(String payer, String account, long amount) {
        return db.sql("SELECT balance FROM account WHERE id = :id FOR UPDATE").bind("id", account)
                .map(row -> row.get(0, Long.class)).one()
                .flatMap(balance -> balance < amount
                        ? Mono.<Booking>just(new InsufficientFunds(account, balance, amount))
                        : debit(payer, account, amount, balance - amount))
                .defaultIfEmpty(new UnknownAccount(account));
    }

    private Mono<Booking> debit(String payer, String account, long amount, long after) {
        UUID id = UUID.randomUUID();
        // The balance is part of the account's representation: its version (ETag) moves with it.
        return db.sql("UPDATE account SET balance = :balance, version = version + 1 WHERE id = :id")
                .bind("balance", after).bind("id", account).fetch().rowsUpdated()
                .then(db.sql("INSERT INTO payment (id, payer, account, amount) VALUES (:id, :payer, :account, :amount)"
                                + " RETURNING created_at")
                        .bind("id", id).bind("payer", payer).bind("account", account).bind("amount", amount)
                        .map(row -> row.get(0, OffsetDateTime.class).toInstant()).one())
                .flatMap(createdAt -> db.sql("INSERT INTO ledger (payment, account, delta, balance)"
                                + " VALUES (:payment, :account, :delta, :balance)")
                        .bind("payment", id).bind("account", account).bind("delta", -amount).bind("balance", after)
                        .fetch().rowsUpdated()
                        .thenReturn(new Booked(id, account, amount, after, createdAt)));
    }
}
