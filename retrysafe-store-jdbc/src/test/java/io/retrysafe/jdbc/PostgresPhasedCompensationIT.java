package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StepCodec;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A compensation that stopped midway, after one of its local steps committed (a reservation given back), is
 * resumed by the next attempt, the completer's or a client's retry: never the forward path again, which could
 * otherwise end forward on an operation that was already partly undone.
 */
class PostgresPhasedCompensationIT {
    private static final String TABLE = "rs_pg_phased_compensation_it";
    private static final Duration LEASE = Duration.ofMillis(300);
    private static JdbcIdempotencyStore store;
    private static PhasedRetrySafe<Connection> phased;

    private final Fingerprint fingerprint = Fingerprint.sha256("checkout".getBytes(StandardCharsets.UTF_8));
    /** The steps that ran, in order, each attempt's included. */
    private final List<String> ran = new CopyOnWriteArrayList<>();
    private volatile boolean providerFails;
    private volatile boolean refundFails;
    private PhasedOperation<String, String, Connection> operation;

    @BeforeAll
    static void setUp() {
        DataSource ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(2)).build();
        store.createSchema();
        RetrySafe engine = RetrySafe.builder(store).policy(OperationPolicy.custom().leaseTtl(LEASE).build()).build();
        phased = PhasedRetrySafe.builder(engine, JdbcPhaseJournal.of(store)).build();
    }

    @BeforeEach
    void operation() {
        operation = PhasedOperation.of("checkout-" + UUID.randomUUID(), StepCodec.utf8(), ResponseCodec.utf8(),
                steps("reserve", "charge", () -> providerFails, "book", "booked"))
                .withCompensation(steps("release", "refund", () -> refundFails, "cancelled", "cancelled"));
    }

    /** A local step, a foreign call that fails while {@code fails} says so, a local step, then {@code answer}. */
    private PhasedOperation.Body<String, String, Connection> steps(String first, String call, BooleanSupplier fails,
            String last, String answer) {
        return (input, phases) -> {
            phases.local(first, StepCodec.none(), c -> step(first));
            phases.foreign(call, StepCodec.utf8(), key -> {
                if (fails.getAsBoolean()) {
                    throw new IllegalStateException(call + " failed");
                }
                step(call);
                return call + "-1";
            });
            phases.local(last, StepCodec.none(), c -> step(last));
            return answer;
        };
    }

    private Void step(String name) {
        ran.add(name);
        return null;
    }

    private PhaseCompleter<Connection> completer() {
        return phased.completer().register(operation).idleFor(Duration.ZERO).build();
    }

    /** Forward failed for the client; the completer's compensation gave the reservation back, then failed. */
    private IdempotencyKey halfCompensated() {
        IdempotencyKey key = IdempotencyKey.of("alice-" + UUID.randomUUID(), "k1");
        providerFails = true;
        refundFails = true;
        assertThatThrownBy(() -> phased.execute(key, fingerprint, operation, "order 1"))
                .hasMessageContaining("charge failed");
        PhaseCompleter<Connection> completer = completer();
        await().atMost(Duration.ofSeconds(10)).until(() -> completer.backlog() > 0);
        assertThat(completer.runOnce().failed()).isEqualTo(1);
        assertThat(ran).containsExactly("reserve", "release");
        // Both failures pass: going forward would now get through.
        providerFails = false;
        refundFails = false;
        return key;
    }

    @Test
    void theCompleterResumesAHalfDoneCompensationInsteadOfGoingForward() {
        IdempotencyKey key = halfCompensated();
        PhaseCompleter<Connection> completer = completer();
        await().atMost(Duration.ofSeconds(10)).until(() -> completer.backlog() > 0);

        PhaseCompleter.Run run = completer.runOnce();

        assertThat(run.compensated()).as(run.toString()).isEqualTo(1);
        assertThat(ran).containsExactly("reserve", "release", "refund", "cancelled");
        assertThat(phased.execute(key, fingerprint, operation, "order 1"))
                .isEqualTo(new Outcome.Replayed<>("cancelled"));
    }

    @Test
    void aRetryResumesAHalfDoneCompensationInsteadOfGoingForward() {
        IdempotencyKey key = halfCompensated();
        await().atMost(Duration.ofSeconds(10)).until(() -> !(phased.execute(key, fingerprint, operation, "order 1")
                instanceof Outcome.InProgress<String>));

        assertThat(ran).containsExactly("reserve", "release", "refund", "cancelled");
        assertThat(phased.execute(key, fingerprint, operation, "order 1"))
                .isEqualTo(new Outcome.Replayed<>("cancelled"));
    }
}
