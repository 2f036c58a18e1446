package io.retrysafe.examples.paymentsjpa;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.UUID;
import org.hibernate.annotations.CreationTimestamp;
import org.hibernate.annotations.SourceType;

/** A payment of the shared {@code payment} table; its time is the database's, read back when it is flushed. */
@Entity
@Table(name = "payment")
public class Payment {
    @Id
    private UUID id;
    private String payer;
    private String account;
    private long amount;
    @CreationTimestamp(source = SourceType.DB)
    @Column(name = "created_at")
    private Instant createdAt;

    protected Payment() {
    }

    Payment(String payer, String account, long amount) {
        this.id = UUID.randomUUID();
        this.payer = payer;
        this.account = account;
        this.amount = amount;
    }

    public UUID id() {
        return id;
    }

    public String account() {
        return account;
    }

    public long amount() {
        return amount;
    }

    public Instant createdAt() {
        return createdAt;
    }
}
