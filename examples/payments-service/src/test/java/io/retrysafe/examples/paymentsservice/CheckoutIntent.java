package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.sql.SQLException;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One client's checkout: its key and its body, on an account and a card of its own, so that the account's holds
 * and payments and the provider's charges of the card are this checkout's alone.
 */
record CheckoutIntent(String key, String account, String card, long amount) {
    static final long BALANCE = 10_000;

    /** A new key on a new account (balance {@value #BALANCE}) with a new card. */
    static CheckoutIntent fresh(long amount) throws SQLException {
        return fresh(amount, newCard());
    }

    static CheckoutIntent fresh(long amount, String card) throws SQLException {
        return new CheckoutIntent(UUID.randomUUID().toString(), PaymentsDatabase.newAccount(BALANCE), card, amount);
    }

    /** A card number nobody else uses. */
    static String newCard() {
        return "4242" + String.format("%012d", ThreadLocalRandom.current().nextLong(1_000_000_000_000L));
    }

    String body() {
        return ServiceITSupport.checkout(account, amount, card);
    }

    boolean declined() {
        return card.equals(PaymentProvider.DECLINED_CARD);
    }
}
