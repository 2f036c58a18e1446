package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.examples.paymentscommon.Booking;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.util.Optional;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Payments by {@code POST /payments}. */
@Service
public class Payments {
    private final AccountRepository accounts;
    private final PaymentRepository payments;

    Payments(AccountRepository accounts, PaymentRepository payments) {
        this.accounts = accounts;
        this.payments = payments;
    }

    /**
     * Debits the account and records the payment. Joins the transaction the RetrySafe filter opened for
     * the request: the key, these entities and the stored response commit together.
     */
    @Transactional
    public Booking pay(String payer, PaymentRequest request) {
        Optional<Account> found = accounts.lock(request.account());
        if (found.isEmpty()) {
            return new Booking.UnknownAccount(request.account());
        }
        Account account = found.get();
        if (account.balance() < request.amount()) {
            return new Booking.InsufficientFunds(account.id(), account.balance(), request.amount());
        }
        account.debit(request.amount());
        // Flushed now: the payment's time is the database's, and the answer carries it.
        Payment payment = payments.saveAndFlush(new Payment(payer, account.id(), request.amount()));
        return new Booking.Booked(payment.id(), account.id(), payment.amount(), account.balance(), payment.createdAt());
    }
}
