package io.retrysafe.examples.paymentsjpa;

/**
 * The account's balance is short of the payment: a business refusal, the answer to an order's payment
 * that {@code @Idempotent} stores and throws again to every retry.
 */
public class InsufficientFundsException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String account;
    private final long balance;
    private final long amount;

    public InsufficientFundsException(String account, long balance, long amount) {
        super("account " + account + " has " + balance + ", the payment needs " + amount, null, false, false);
        this.account = account;
        this.balance = balance;
        this.amount = amount;
    }

    public String getAccount() {
        return account;
    }

    public long getBalance() {
        return balance;
    }

    public long getAmount() {
        return amount;
    }
}
