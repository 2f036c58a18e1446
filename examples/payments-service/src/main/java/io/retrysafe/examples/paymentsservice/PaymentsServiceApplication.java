package io.retrysafe.examples.paymentsservice;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A payments service on Spring Boot, protected by RetrySafe: a retried {@code POST /payments}
 * charges once and gets the first answer back; {@code PUT /orders/{orderNumber}/payment} books an
 * order once per order number; {@code PATCH /accounts/{id}} needs the account's current
 * {@code ETag} in {@code If-Match}.
 *
 * <p>With {@code spring.datasource.url} (or env {@code RETRYSAFE_JDBC_URL}) it uses that PostgreSQL;
 * otherwise it starts an embedded one.
 *
 * <pre>
 * ./mvnw -q -pl examples/payments-service -am package -DskipTests -DskipITs exec:java
 * </pre>
 */
@SpringBootApplication
public class PaymentsServiceApplication {

    public static void main(String[] args) {
        SpringApplication.run(PaymentsServiceApplication.class, args);
    }
}
