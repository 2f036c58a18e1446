package io.retrysafe.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Backoff;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The breaker on a ticker the test moves: no sleeps, every transition at the nanosecond it is due. */
class CircuitBreakerTest {
    private static final int THRESHOLD = 5;
    private static final Duration FIRST = Duration.ofSeconds(1);
    private static final Duration MAX = Duration.ofSeconds(30);
    private static final RuntimeException FAILURE = new IllegalStateException("Redis down");

    private final AtomicLong now = new AtomicLong(123_456_789L);
    private final List<String> transitions = new ArrayList<>();
    private final CircuitBreaker breaker = new CircuitBreaker(THRESHOLD, Backoff.exponential(FIRST, MAX), now::get,
            (from, to, failures, backoff, cause) -> transitions.add(from + "->" + to));

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    private void fail(int times) {
        for (int i = 0; i < times; i++) {
            assertThat(breaker.tryAcquire()).as("call %d let through", i + 1).isTrue();
            breaker.onFailure(FAILURE);
        }
    }

    @Test
    void staysClosedBelowTheThresholdAndASuccessResetsTheCount() {
        fail(THRESHOLD - 1);
        assertThat(breaker.tryAcquire()).isTrue();
        breaker.onSuccess();
        fail(THRESHOLD - 1);

        assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
        assertThat(transitions).isEmpty();
    }

    @Test
    void opensAfterTheThresholdOfConsecutiveFailuresAndLetsNothingThrough() {
        fail(THRESHOLD);

        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        assertThat(transitions).containsExactly("CLOSED->OPEN");
        advance(FIRST.minusNanos(1));
        for (int i = 0; i < 100; i++) {
            assertThat(breaker.tryAcquire()).isFalse();
        }
        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        assertThat(transitions).as("one change logged, however many calls were refused").hasSize(1);
    }

    @Test
    void afterTheBackoffOneProbeGoesThroughAndItsSuccessCloses() {
        fail(THRESHOLD);
        advance(FIRST);

        assertThat(breaker.tryAcquire()).as("the probe").isTrue();
        assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
        assertThat(breaker.tryAcquire()).as("a second call while the probe is out").isFalse();
        breaker.onSuccess();

        assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
        assertThat(transitions).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->CLOSED");
        assertThat(breaker.tryAcquire()).isTrue();
        assertThat(breaker.backoffNanos()).as("backoff reset").isEqualTo(FIRST.toNanos());
    }

    @Test
    void aFailedProbeOpensAgainWithTheBackoffDoubledUpToItsMaximum() {
        fail(THRESHOLD);
        List<Duration> backoffs = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Duration backoff = Duration.ofNanos(breaker.backoffNanos());
            backoffs.add(backoff);
            advance(backoff.minusNanos(1));
            assertThat(breaker.tryAcquire()).as("1 ns before the backoff of %s ends", backoff).isFalse();
            advance(Duration.ofNanos(1));
            assertThat(breaker.tryAcquire()).as("the probe after %s", backoff).isTrue();
            breaker.onFailure(FAILURE);
            assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        }

        assertThat(backoffs).containsExactly(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(4),
                Duration.ofSeconds(8), Duration.ofSeconds(16), Duration.ofSeconds(30), Duration.ofSeconds(30),
                Duration.ofSeconds(30));
        assertThat(Duration.ofNanos(breaker.backoffNanos())).isEqualTo(MAX);

        advance(MAX);
        assertThat(breaker.tryAcquire()).isTrue();
        breaker.onSuccess();
        assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
        fail(THRESHOLD);
        assertThat(Duration.ofNanos(breaker.backoffNanos())).as("after closing, the backoff starts over")
                .isEqualTo(FIRST);
    }

    @Test
    void resultsOfCallsLetThroughBeforeItOpenedDoNotCloseIt() {
        assertThat(breaker.tryAcquire()).as("a slow call, let through while closed").isTrue();
        fail(THRESHOLD);

        breaker.onSuccess(); // the slow call returns after the breaker opened
        breaker.onFailure(FAILURE);

        assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
        assertThat(transitions).containsExactly("CLOSED->OPEN");
    }

    @Test
    void onlyOneOfManyConcurrentCallersIsTheProbe() throws Exception {
        fail(THRESHOLD);
        advance(FIRST);
        int threads = 16;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Boolean>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return breaker.tryAcquire();
                }));
            }
            start.countDown();
            int probes = 0;
            for (Future<Boolean> r : results) {
                probes += r.get(30, TimeUnit.SECONDS) ? 1 : 0;
            }
            assertThat(probes).isEqualTo(1);
            assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
        } finally {
            pool.shutdownNow();
        }
    }
}
