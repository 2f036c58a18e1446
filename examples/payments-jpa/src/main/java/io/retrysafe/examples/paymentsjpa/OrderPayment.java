package io.retrysafe.examples.paymentsjpa;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.util.UUID;

/** The payment of an order ({@code order_payment}): one per order, whatever happens above. */
@Entity
@Table(name = "order_payment")
public class OrderPayment {
    @Id
    private String orderNumber;
    private UUID payment;

    protected OrderPayment() {
    }

    OrderPayment(String orderNumber, UUID payment) {
        this.orderNumber = orderNumber;
        this.payment = payment;
    }
}
