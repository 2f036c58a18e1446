package io.retrysafe.examples.paymentsjpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.persistence.Version;

/** An account of the shared {@code account} table; its balance moves only through {@link #debit}. */
@Entity
@Table(name = "account")
public class Account {
    @Id
    private String id;
    private String label;
    private long balance;
    @Version
    private long version;

    protected Account() {
    }

    public String id() {
        return id;
    }

    public long balance() {
        return balance;
    }

    /** Takes the amount off the balance, or refuses when the balance is short of it. */
    public void debit(long amount) {
        if (balance < amount) {
            throw new InsufficientFundsException(id, balance, amount);
        }
        balance -= amount;
    }
}
