package io.retrysafe.examples.paymentsreactive;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The payments service of {@code examples/payments-service} on Spring WebFlux and R2DBC, protected by
 * RetrySafe: a retried {@code POST /payments} charges once and gets the first answer back. The key, the
 * payment and the stored answer commit in one R2DBC transaction; no thread waits for the database.
 *
 * <p>With {@code spring.r2dbc.url} (or env {@code RETRYSAFE_R2DBC_URL}) it uses that PostgreSQL;
 * otherwise it starts an embedded one.
 *
 * <pre>
 * ./mvnw -q -pl examples/payments-reactive -am package -DskipTests -DskipITs exec:java
 * </pre>
 */
@SpringBootApplication
public class PaymentsReactiveApplication {

    public static void main(String[] args) {
        SpringApplication.run(PaymentsReactiveApplication.class, args);
    }
}
