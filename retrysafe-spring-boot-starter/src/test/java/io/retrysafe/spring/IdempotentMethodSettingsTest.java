package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@link Idempotent} settings are checked when the application starts, with a message naming the
 * method, not at the method's first call.
 */
class IdempotentMethodSettingsTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, RetrySafeAutoConfiguration.class,
                    RetrySafeIdempotentAutoConfiguration.class))
            .withPropertyValues("retrysafe.store.type=memory");

    public static class Valid {
        @Idempotent(key = "#id", retention = "7d", waitForResult = "2s",
                replayedExceptions = IllegalArgumentException.class)
        public String run(String id) {
            return id;
        }
    }

    public static class UnreadableRetention {
        @Idempotent(key = "#id", retention = "7 days")
        public String run(String id) {
            return id;
        }
    }

    public static class RetentionShorterThanTheLease {
        @Idempotent(key = "#id", retention = "10s")
        public String run(String id) {
            return id;
        }
    }

    public static class NegativeWait {
        @Idempotent(key = "#id", waitForResult = "-1s")
        public String run(String id) {
            return id;
        }
    }

    public static class BrokenKey {
        @Idempotent(key = "#id +")
        public String run(String id) {
            return id;
        }
    }

    public static class PhasedOnMemory {
        @Idempotent(key = "#id", scope = Idempotent.Scope.SHARED)
        public String run(String id, io.retrysafe.Phases<java.sql.Connection> phases) {
            return id;
        }
    }

    public static class PhasedOnAnotherTransaction {
        @Idempotent(key = "#id", scope = Idempotent.Scope.SHARED)
        public String run(String id, io.retrysafe.Phases<String> phases) {
            return id;
        }
    }

    public static class PhasedAndTransactional {
        @Idempotent(key = "#id", scope = Idempotent.Scope.SHARED)
        @org.springframework.transaction.annotation.Transactional
        public String run(String id, io.retrysafe.Phases<java.sql.Connection> phases) {
            return id;
        }
    }

    public static class UndeclaredCheckedException {
        @Idempotent(key = "#id", replayedExceptions = java.io.IOException.class)
        public String run(String id) {
            return id;
        }
    }

    /**
     * Key last is only for work whose every effect is in a transaction of its own: a duplicate in flight
     * runs the method too. A method may call out, or join its caller's transaction, whose other writes
     * the duplicate's losing insert would abort; so the combination stops the start.
     */
    @Test
    void theKeyWrittenLastFailsTheStartOfAnApplicationWithIdempotentMethods() {
        ApplicationContextRunner postgres = runner.withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE,
                BootLine.DATA_SOURCE_TRANSACTION_MANAGER)).withPropertyValues("retrysafe.store.type=jdbc",
                "spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                "spring.datasource.username=" + TestDatabases.postgresUser(),
                "spring.datasource.password=" + TestDatabases.postgresPassword());

        postgres.withPropertyValues("retrysafe.store.key-order=last").withBean(Valid.class)
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("retrysafe.store.key-order=last")
                        .hasMessageContaining("@Idempotent on " + Valid.class.getName() + ".run(String)")
                        .hasMessageContaining("set retrysafe.store.key-order=first"));
        postgres.withPropertyValues("retrysafe.store.key-order=last-no-lookup").withBean(Valid.class)
                .run(context -> assertThat(context).getFailure()
                        .hasMessageContaining("retrysafe.store.key-order=last-no-lookup"));
        postgres.withPropertyValues("retrysafe.store.key-order=last")
                .run(context -> assertThat(context).as("no @Idempotent method").hasNotFailed());
        postgres.withBean(Valid.class).run(context -> assertThat(context).as("key first").hasNotFailed());
    }

    @Test
    void validSettingsStart() {
        runner.withBean(Valid.class).run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void anUnreadableDurationFailsTheStartNamingTheMethod() {
        runner.withBean(UnreadableRetention.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining("@Idempotent on " + UnreadableRetention.class.getName() + ".run(String)")
                .hasMessageContaining("retention must be a duration such as 7d").hasMessageContaining("\"7 days\""));
    }

    @Test
    void aRetentionShorterThanTheLeaseFailsTheStart() {
        runner.withBean(RetentionShorterThanTheLease.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(RetentionShorterThanTheLease.class.getName() + ".run(String)")
                .hasMessageContaining("leaseTtl must not exceed retention"));
    }

    @Test
    void aNegativeWaitFailsTheStart() {
        runner.withBean(NegativeWait.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(NegativeWait.class.getName() + ".run(String)")
                .hasMessageContaining("waitForResult"));
    }

    @Test
    void aKeyThatIsNoExpressionFailsTheStart() {
        runner.withBean(BrokenKey.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(BrokenKey.class.getName() + ".run(String)")
                .hasMessageContaining("key \"#id +\" is not a SpEL expression"));
    }

    @Test
    void aCheckedExceptionTheMethodCannotThrowFailsTheStart() {
        runner.withBean(UndeclaredCheckedException.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(UndeclaredCheckedException.class.getName() + ".run(String)")
                .hasMessageContaining("java.io.IOException"));
    }

    @Test
    void aPhasedMethodWithoutTheJdbcStoreFailsTheStart() {
        runner.withBean(PhasedOnMemory.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(PhasedOnMemory.class.getName() + ".run(String, Phases)")
                .hasMessageContaining("phased operations need the JDBC store"));
    }

    @Test
    void aPhasedMethodWhoseStepsTakeAnotherTransactionFailsTheStart() {
        runner.withBean(PhasedOnAnotherTransaction.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(PhasedOnAnotherTransaction.class.getName() + ".run(String, Phases)")
                .hasMessageContaining("declare Phases<Connection>"));
    }

    @Test
    void aPhasedMethodThatIsAlsoTransactionalFailsTheStart() {
        runner.withBean(PhasedAndTransactional.class).run(context -> assertThat(context).getFailure()
                .hasMessageContaining(PhasedAndTransactional.class.getName() + ".run(String, Phases)")
                .hasMessageContaining("remove @Transactional"));
    }
}
