package io.retrysafe.examples.paymentsjpa;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.spring.Idempotent;
import io.retrysafe.spring.RetrySafeAutoConfiguration;
import io.retrysafe.spring.RetrySafeIdempotentAutoConfiguration;
import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.transaction.annotation.Transactional;

/**
 * On {@code JpaTransactionManager}, an {@code @Idempotent} method whose own {@code @Transactional} rolls
 * back on one of its {@code replayedExceptions} could never store it (JPA cannot take a rollback-only
 * mark back): the application does not start, and says what to declare instead.
 */
class RollbackRulesIT {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    HibernateJpaAutoConfiguration.class, TransactionAutoConfiguration.class,
                    JacksonAutoConfiguration.class, RetrySafeAutoConfiguration.class,
                    RetrySafeIdempotentAutoConfiguration.class))
            .withPropertyValues("spring.datasource.url=" + PaymentsDatabase.url(),
                    "spring.datasource.username=" + PaymentsDatabase.user(),
                    "spring.datasource.password=" + PaymentsDatabase.password(),
                    "spring.datasource.hikari.maximum-pool-size=2");

    public static class RollsBack {
        @Idempotent(key = "#order", scope = Idempotent.Scope.SHARED, replayedExceptions = InsufficientFundsException.class)
        @Transactional
        public String pay(String order) {
            return order;
        }
    }

    /** A checked exception does not roll a {@code @Transactional} back. */
    public static class Checked {
        @Idempotent(key = "#order", scope = Idempotent.Scope.SHARED, replayedExceptions = IOException.class)
        @Transactional
        public String pay(String order) throws IOException {
            return order;
        }
    }

    @Test
    void aTransactionalRollingBackOnAReplayedExceptionFailsTheStartNamingTheMethod() {
        // Checked is registered, so checked, first: the start fails on RollsBack, not on it. The payments
        // service's OrderPayments (noRollbackFor) starts in the other tests' context.
        runner.withBean(Checked.class).withBean(RollsBack.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining("@Idempotent on " + RollsBack.class.getName() + ".pay(String)")
                .hasMessageContaining("rolls back on " + InsufficientFundsException.class.getName())
                .hasMessageContaining("@Transactional(noRollbackFor = InsufficientFundsException.class)"));
    }
}
