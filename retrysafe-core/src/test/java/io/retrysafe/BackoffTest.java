package io.retrysafe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Backoff.Jitter;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
    private static final Duration MS_100 = Duration.ofMillis(100);

    @Test
    void exponentialDoublesUpToTheCap() {
        Backoff backoff = Backoff.exponential(MS_100, Duration.ofMillis(500));

        assertThat(backoff.delay(1)).isEqualTo(MS_100);
        assertThat(backoff.delay(2)).isEqualTo(Duration.ofMillis(200));
        assertThat(backoff.delay(3)).isEqualTo(Duration.ofMillis(400));
        assertThat(backoff.delay(4)).isEqualTo(Duration.ofMillis(500));
        assertThat(backoff.delay(Integer.MAX_VALUE)).isEqualTo(Duration.ofMillis(500));
    }

    @Test
    void fixedWaitsTheSameEveryTime() {
        assertThat(Backoff.fixed(MS_100).delay(1)).isEqualTo(MS_100);
        assertThat(Backoff.fixed(MS_100).delay(50)).isEqualTo(MS_100);
    }

    @Test
    void fullJitterStaysWithinTheCapAndSpreads() {
        Backoff backoff = Backoff.exponential(MS_100, Duration.ofSeconds(1)).withJitter(Jitter.FULL);
        long distinct = java.util.stream.IntStream.range(0, 200).mapToObj(i -> backoff.delay(3)).peek(d -> {
            assertThat(d).isBetween(Duration.ZERO, Duration.ofMillis(400));
        }).distinct().count();

        assertThat(distinct).isGreaterThan(100);
    }

    @Test
    void aMultiplierOfOneKeepsTheInitialWait() {
        Backoff backoff = Backoff.exponential(MS_100, Duration.ofSeconds(1)).withMultiplier(1.0);

        assertThat(backoff.cap(10)).isEqualTo(MS_100);
    }

    @Test
    void badValuesAreRefusedWithTheirName() {
        assertThatThrownBy(() -> Backoff.exponential(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("initial must not exceed max");
        assertThatThrownBy(() -> Backoff.exponential(MS_100, MS_100).withMultiplier(0.5))
                .hasMessageContaining("multiplier");
        assertThatThrownBy(() -> Backoff.exponential(MS_100, MS_100).withMultiplier(Double.NaN))
                .hasMessageContaining("multiplier");
        assertThatThrownBy(() -> Backoff.fixed(Duration.ZERO)).hasMessageContaining("initial");
        assertThatThrownBy(() -> Backoff.fixed(MS_100).delay(0)).hasMessageContaining("retry must be at least 1");
    }

    @Test
    void sleepReportsAnInterruptAndKeepsTheFlag() {
        Thread.currentThread().interrupt();
        try {
            assertThat(Backoff.fixed(Duration.ofSeconds(10)).sleep(1)).isFalse();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }
}
