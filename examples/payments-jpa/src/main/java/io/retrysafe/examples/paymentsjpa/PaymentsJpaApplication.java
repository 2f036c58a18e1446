package io.retrysafe.examples.paymentsjpa;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The payments API on Spring Data JPA and Hibernate: {@code POST /payments} runs once per
 * {@code Idempotency-Key} and {@code PUT /orders/{orderNumber}/payment} once per order number, the
 * key, the entities and the stored answer committed by one {@code JpaTransactionManager} transaction.
 * It needs a PostgreSQL ({@code RETRYSAFE_JDBC_URL}); its tables are the other payments examples'.
 */
@SpringBootApplication
public class PaymentsJpaApplication {

    public static void main(String[] args) {
        SpringApplication.run(PaymentsJpaApplication.class, args);
    }
}
