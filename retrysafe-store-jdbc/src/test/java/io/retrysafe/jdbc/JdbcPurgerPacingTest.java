package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The purge's pacing without a database: its values, and the pause it asks for after a batch. */
class JdbcPurgerPacingTest {
    private static final long MS = 1_000_000;

    private final JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(PurgeSchedulerTest.unusedDataSource())
            .dialect(JdbcDialect.POSTGRESQL).build();

    @Test
    void backToBackByDefault() {
        assertThat(store.purger().build().maxDutyCycle()).isEqualTo(JdbcPurger.DEFAULT_MAX_DUTY_CYCLE).isEqualTo(1.0);
        assertThat(store.purger().maxDutyCycle(0.25).build().maxDutyCycle()).isEqualTo(0.25);
    }

    @ParameterizedTest
    @ValueSource(doubles = {0, -0.5, 1.01, 2, Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY})
    void aShareOutsideZeroExclusiveToOneIsRefused(double share) {
        assertThatThrownBy(() -> store.purger().maxDutyCycle(share))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxDutyCycle must be more than 0 and at most 1, but was " + share);
    }

    @Test
    void theShareIsSetOnce() {
        assertThatThrownBy(() -> store.purger().maxDutyCycle(0.5).maxDutyCycle(0.5))
                .isInstanceOf(IllegalStateException.class).hasMessage("maxDutyCycle was already set to 0.5");
    }

    @Test
    void thePauseIsTheBatchsTimeTimesOneOverTheShareLessOne() {
        assertThat(new BatchPacing(1, System::nanoTime, BatchPacing.SLEEP).pauseNanos(40 * MS)).isZero();
        assertThat(new BatchPacing(0.5, System::nanoTime, BatchPacing.SLEEP).pauseNanos(40 * MS)).isEqualTo(40 * MS);
        assertThat(new BatchPacing(0.25, System::nanoTime, BatchPacing.SLEEP).pauseNanos(40 * MS)).isEqualTo(120 * MS);
        assertThat(new BatchPacing(0.2, System::nanoTime, BatchPacing.SLEEP).pauseNanos(7 * MS)).isEqualTo(28 * MS);
        assertThat(new BatchPacing(Double.MIN_VALUE, System::nanoTime, BatchPacing.SLEEP).pauseNanos(MS))
                .as("saturates instead of overflowing").isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void pauseAfterTimesTheBatchWithItsClockAndAsksTheSleeper() {
        long[] now = {100 * MS};
        List<Long> asked = new ArrayList<>();
        BatchPacing pacing = new BatchPacing(0.5, () -> now[0], asked::add);

        long start = pacing.now();
        now[0] += 30 * MS;
        assertThat(pacing.pauseAfter(start)).isTrue();

        assertThat(asked).containsExactly(30 * MS);
    }

    @Test
    void anInterruptBeforeOrDuringThePauseEndsTheRunAndIsLeftToTheCaller() {
        List<Long> asked = new ArrayList<>();
        BatchPacing sleeping = new BatchPacing(0.5, () -> 0, asked::add);
        Thread.currentThread().interrupt();
        assertThat(sleeping.pauseAfter(-MS)).isFalse();
        assertThat(asked).as("no pause once interrupted").isEmpty();
        assertThat(Thread.interrupted()).as("cleared until the run has let go of the database").isFalse();

        BatchPacing interrupted = new BatchPacing(0.5, () -> 0, nanos -> {
            throw new InterruptedException();
        });
        assertThat(interrupted.pauseAfter(-MS)).isFalse();
        assertThat(new BatchPacing(1, () -> 0, nanos -> {
            throw new AssertionError("no pause at a share of 1");
        }).pauseAfter(-MS)).isTrue();
    }
}
