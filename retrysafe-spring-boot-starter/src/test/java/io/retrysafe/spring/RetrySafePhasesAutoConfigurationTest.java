package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Phased operations in the starter: the engine on the JDBC store, and the completer of the application's operations. */
class RetrySafePhasesAutoConfigurationTest {
    private static final AutoConfigurations RETRYSAFE = AutoConfigurations.of(
            RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
            RetrySafePhasesAutoConfiguration.class, RetrySafeEndpointAutoConfiguration.class);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, BootLine.DATA_SOURCE,
                    BootLine.DATA_SOURCE_TRANSACTION_MANAGER))
            .withConfiguration(RETRYSAFE)
            .withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                    "spring.datasource.username=" + TestDatabases.postgresUser(),
                    "spring.datasource.password=" + TestDatabases.postgresPassword(),
                    "retrysafe.store.initialize-schema=true",
                    "management.endpoints.web.exposure.include=" + IdempotencyEndpoint.ID);

    /** A first attempt that fails after its first step, and attempts after it that finish. */
    static final AtomicInteger ATTEMPTS = new AtomicInteger();

    static PhasedOperation<String, String, Connection> flaky() {
        return PhasedOperation.of("flaky", StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> {
            phases.local("reserve", StepCodec.none(), c -> null);
            if (ATTEMPTS.incrementAndGet() == 1) {
                throw new IllegalStateException("the first attempt fails after its reservation");
            }
            return phases.local("book", StepCodec.utf8(), c -> "booked " + order);
        });
    }

    @Test
    void aJdbcStoreGetsAPhasedEngineAndTheCompleterDrivesTheApplicationsOperationsMeteredAndShown() throws Exception {
        String table = "rs_phases_autoconfig_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        ATTEMPTS.set(0);
        try {
            runner.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .withBean("flaky", PhasedOperation.class, RetrySafePhasesAutoConfigurationTest::flaky)
                    .withPropertyValues("retrysafe.store.table=" + table, "retrysafe.phases.completer.idle-for=0s",
                            "retrysafe.phases.completer.interval=1h", "retrysafe.phases.max-saved-bytes=4KB")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        @SuppressWarnings("unchecked")
                        PhasedRetrySafe<Connection> phased = context.getBean(PhasedRetrySafe.class);
                        assertThat(phased.maxSavedBytes()).isEqualTo(4096);
                        IdempotencyKey key = IdempotencyKey.of("user-1:POST /checkouts", UUID.randomUUID().toString());
                        Fingerprint fingerprint = Fingerprint.sha256("order-1".getBytes(StandardCharsets.UTF_8));
                        assertThatThrownBy(() -> phased.execute(key, fingerprint, flaky(), "order-1"))
                                .hasMessageContaining("first attempt fails");

                        RetrySafeCompleterScheduler scheduler = context.getBean(RetrySafeCompleterScheduler.class);
                        PhaseCompleter.Run run = scheduler.runNow();

                        assertThat(run.ran()).isTrue();
                        assertThat(run.forwarded()).as("operations driven forward: %s", run).isEqualTo(1);
                        assertThat(scheduler.lastBacklog()).isZero();
                        Outcome<String> late = phased.execute(key, fingerprint, flaky(), "order-1");
                        assertThat(late).isInstanceOf(Outcome.Replayed.class);
                        assertThat(late.orThrow()).isEqualTo("booked order-1");
                        MeterRegistry meters = context.getBean(MeterRegistry.class);
                        assertThat(meters.get(MicrometerRetrySafeListener.COMPLETER_OPERATIONS).tag("outcome", "forwarded")
                                .counter().count()).isEqualTo(1.0);
                        assertThat(meters.get(MicrometerRetrySafeListener.COMPLETER_RUNS).tag("ran", "true").counter()
                                .count()).isEqualTo(1.0);
                        assertThat(meters.get(MicrometerRetrySafeListener.COMPLETER_BACKLOG).gauge().value()).isZero();
                        IdempotencyEndpoint.Completer shown = context.getBean(IdempotencyEndpoint.class).idempotency()
                                .completer();
                        assertThat(shown.operations()).containsExactly("flaky");
                        assertThat(shown.idleFor()).isEqualTo("PT0S");
                        assertThat(shown.backlog()).isZero();
                        assertThat(shown.lastRun().forwarded()).isEqualTo(1);
                    });
        } finally {
            try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }

    @Test
    void withoutPhasedOperationsTheCompleterHasNothingToRunAndTheEndpointShowsNone() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(PhasedRetrySafe.class);
            RetrySafeCompleterScheduler scheduler = context.getBean(RetrySafeCompleterScheduler.class);
            assertThat(scheduler.completer()).isEmpty();
            assertThat(scheduler.isRunning()).as("nothing scheduled").isFalse();
            assertThatThrownBy(scheduler::runNow).hasMessageContaining("no PhasedOperation bean");
            assertThat(context.getBean(IdempotencyEndpoint.class).idempotency().completer()).isNull();
        });
    }

    @Test
    void withoutAJdbcStoreThereIsNoPhasedEngine() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(BootLine.JACKSON))
                .withConfiguration(RETRYSAFE).run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(PhasedRetrySafe.class);
                    assertThat(context).doesNotHaveBean(RetrySafeCompleterScheduler.class);
                });
    }
}
