package io.retrysafe.examples.paymentsservice;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;

/**
 * A payments service on Spring Boot, protected by RetrySafe: a retried {@code POST /payments}
 * charges once and gets the first answer back; {@code PUT /orders/{orderNumber}/payment} books an
 * order once per order number; {@code PATCH /accounts/{id}} needs the account's current
 * {@code ETag} in {@code If-Match}.
 *
 * <p>With {@code spring.datasource.url} (or env {@code RETRYSAFE_JDBC_URL}) it uses that PostgreSQL;
 * otherwise it starts an embedded one, which PostgreSQL does not allow as root.
 *
 * <pre>
 * ./mvnw -q -pl examples/payments-service -am package -DskipTests -DskipITs exec:java
 * </pre>
 */
@SpringBootApplication
public class PaymentsServiceApplication {

    /** Exit status when the embedded PostgreSQL cannot start because the service runs as root. */
    public static final int EXIT_RUNNING_AS_ROOT = 2;

    public static void main(String[] args) {
        SpringApplication application = new SpringApplication(PaymentsServiceApplication.class);
        // Before anything starts: without a database URL, as root, there is nothing to start.
        application.addListeners((ApplicationEnvironmentPreparedEvent event) ->
                EmbeddedPostgresConfiguration.requireCanStart(event.getEnvironment()));
        try {
            application.run(args);
        } catch (RuntimeException e) {
            if (EmbeddedPostgresConfiguration.RunningAsRootException.isCauseOf(e)) {
                // Already reported by RunningAsRootFailureAnalyzer; the context is closed.
                System.exit(EXIT_RUNNING_AS_ROOT);
            }
            throw e;
        }
    }
}
