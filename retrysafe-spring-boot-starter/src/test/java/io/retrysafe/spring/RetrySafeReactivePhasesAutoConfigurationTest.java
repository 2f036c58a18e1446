package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;

/**
 * Phased operations in a reactive application: the non-blocking engine on the R2DBC store, and the completer of the
 * application's {@link AsyncPhasedOperation} beans on the schedule the JDBC store's has.
 */
class RetrySafeReactivePhasesAutoConfigurationTest {
    private static final AutoConfigurations RETRYSAFE = AutoConfigurations.of(
            RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
            RetrySafeReactiveAutoConfiguration.class, RetrySafePhasesAutoConfiguration.class,
            RetrySafeReactivePhasesAutoConfiguration.class);

    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON)).withConfiguration(RETRYSAFE)
            .withPropertyValues("retrysafe.http.scope=header", "retrysafe.http.scope-header=X-User");

    /** A first attempt that fails after its first step, and attempts after it that finish. */
    static final AtomicInteger ATTEMPTS = new AtomicInteger();

    static AsyncPhasedOperation<String, String, Connection> flaky() {
        return AsyncPhasedOperation.of("flaky", StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> phases
                .local("reserve", StepCodec.none(), c -> CompletableFuture.<Void>completedFuture(null))
                .thenCompose(none -> ATTEMPTS.incrementAndGet() == 1
                        ? CompletableFuture.failedFuture(new IllegalStateException("the first attempt fails after "
                                + "its reservation"))
                        : phases.local("book", StepCodec.utf8(), c -> CompletableFuture.completedFuture("booked " + order))));
    }

    private ReactiveWebApplicationContextRunner r2dbc(String table) {
        return runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC, BootLine.R2DBC_TRANSACTION_MANAGER))
                .withPropertyValues(SpringR2dbc.properties())
                .withPropertyValues("retrysafe.store.table=" + table, "retrysafe.store.initialize-schema=true");
    }

    private static String table() {
        return "rs_reactive_phases_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    @Test
    void anR2dbcStoreGetsANonBlockingPhasedEngineAndTheCompleterDrivesTheApplicationsOperationsMetered()
            throws Exception {
        String table = table();
        ATTEMPTS.set(0);
        try {
            r2dbc(table).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .withBean("flaky", AsyncPhasedOperation.class, RetrySafeReactivePhasesAutoConfigurationTest::flaky)
                    .withPropertyValues("retrysafe.phases.completer.idle-for=0s",
                            "retrysafe.phases.completer.interval=1h", "retrysafe.phases.max-saved-bytes=4KB")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean(PhasedRetrySafe.class);
                        @SuppressWarnings("unchecked")
                        AsyncPhasedRetrySafe<Connection> phased = context.getBean(AsyncPhasedRetrySafe.class);
                        assertThat(phased.maxSavedBytes()).isEqualTo(4096);
                        assertThat(phased.engine().store()).isSameAs(context.getBean(io.retrysafe.r2dbc.R2dbcIdempotencyStore.class));
                        IdempotencyKey key = IdempotencyKey.of("user-1:POST /checkouts", UUID.randomUUID().toString());
                        Fingerprint fingerprint = Fingerprint.sha256("order-1".getBytes(StandardCharsets.UTF_8));
                        assertThatThrownBy(() -> phased.execute(key, fingerprint, flaky(), "order-1")
                                .toCompletableFuture().get(30, TimeUnit.SECONDS))
                                .hasRootCauseMessage("the first attempt fails after its reservation");

                        RetrySafeCompleterScheduler scheduler = context.getBean(RetrySafeCompleterScheduler.class);
                        assertThat(scheduler.completer()).hasValueSatisfying(c ->
                                assertThat(c.operations()).containsExactly("flaky"));
                        PhaseCompleter.Run run = scheduler.runNow();

                        assertThat(run.ran()).isTrue();
                        assertThat(run.forwarded()).as("operations driven forward: %s", run).isEqualTo(1);
                        assertThat(scheduler.lastBacklog()).isZero();
                        Outcome<String> late = phased.execute(key, fingerprint, flaky(), "order-1")
                                .toCompletableFuture().get(30, TimeUnit.SECONDS);
                        assertThat(late).isEqualTo(new Outcome.Replayed<>("booked order-1"));
                        MeterRegistry meters = context.getBean(MeterRegistry.class);
                        assertThat(meters.get(MicrometerRetrySafeListener.COMPLETER_OPERATIONS).tag("outcome", "forwarded")
                                .counter().count()).isEqualTo(1.0);
                        assertThat(meters.get(MicrometerRetrySafeListener.COMPLETER_BACKLOG).gauge().value()).isZero();
                    });
        } finally {
            SpringPostgres.drop(table);
        }
    }

    @Test
    void withoutAsyncPhasedOperationsTheCompleterHasNothingToRun() throws Exception {
        String table = table();
        try {
            r2dbc(table).run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(AsyncPhasedRetrySafe.class);
                RetrySafeCompleterScheduler scheduler = context.getBean(RetrySafeCompleterScheduler.class);
                assertThat(scheduler.completer()).isEmpty();
                assertThat(scheduler.isRunning()).as("nothing scheduled").isFalse();
            });
        } finally {
            SpringPostgres.drop(table);
        }
    }

    @Test
    void withoutTheR2dbcStoreThereIsNoNonBlockingPhasedEngine() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(AsyncPhasedRetrySafe.class);
            assertThat(context).doesNotHaveBean(RetrySafeCompleterScheduler.class);
        });
    }

    @Test
    void theCompleterCanBeSwitchedOff() throws Exception {
        String table = table();
        try {
            r2dbc(table).withBean("flaky", AsyncPhasedOperation.class, RetrySafeReactivePhasesAutoConfigurationTest::flaky)
                    .withPropertyValues("retrysafe.phases.completer.enabled=false").run(context -> {
                        assertThat(context).hasSingleBean(AsyncPhasedRetrySafe.class);
                        assertThat(context).doesNotHaveBean(RetrySafeCompleterScheduler.class);
                    });
        } finally {
            SpringPostgres.drop(table);
        }
    }
}
