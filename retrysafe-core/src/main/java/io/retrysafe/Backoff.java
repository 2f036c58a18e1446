package io.retrysafe;

import io.retrysafe.internal.Require;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How long to wait before trying again: {@code initial × multiplier^(n-1)}, capped at {@code max},
 * before retry {@code n} (the first retry is {@code n = 1}). With {@link Jitter#FULL} the wait is
 * drawn uniformly from {@code [0, that cap]}, so that many callers that failed together do not
 * come back together; with {@link Jitter#NONE} it is the cap itself, which a broker's redelivery
 * delay or a test can rely on.
 *
 * <p>Every place in RetrySafe that backs off uses this one type: the retrying client, the message
 * inbox, the NATS publisher, the Redis circuit breaker, the engine's wait for a key in flight.
 *
 * @param initial    the wait before the first retry; positive
 * @param max        no wait is longer; at least {@code initial}
 * @param multiplier how much the cap grows per retry; at least 1 (1 keeps it at {@code initial})
 * @param jitter     whether the wait is the cap or a random time below it
 */
public record Backoff(Duration initial, Duration max, double multiplier, Jitter jitter) {

    /** Whether a wait is the cap itself or drawn below it. */
    public enum Jitter {
        /** The wait is exactly the cap: deterministic. */
        NONE,
        /** The wait is uniform in {@code [0, cap]} (“full jitter”): spreads callers that failed together. */
        FULL
    }

    public Backoff {
        Require.positive(initial, "initial");
        Require.positive(max, "max");
        Require.notNull(jitter, "jitter");
        if (initial.compareTo(max) > 0) {
            throw new IllegalArgumentException("initial must not exceed max, but was initial=" + initial + ", max="
                    + max);
        }
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new IllegalArgumentException("multiplier must be a finite number of at least 1, but was "
                    + multiplier);
        }
    }

    /** Doubling from {@code initial} up to {@code max}, without jitter. */
    public static Backoff exponential(Duration initial, Duration max) {
        return new Backoff(initial, max, 2.0, Jitter.NONE);
    }

    /** The same wait before every retry. */
    public static Backoff fixed(Duration delay) {
        return new Backoff(delay, delay, 1.0, Jitter.NONE);
    }

    public Backoff withMultiplier(double multiplier) {
        return new Backoff(initial, max, multiplier, jitter);
    }

    public Backoff withJitter(Jitter jitter) {
        return new Backoff(initial, max, multiplier, jitter);
    }

    /**
     * The upper bound of the wait before retry {@code retry}: {@code min(max, initial × multiplier^(retry-1))}.
     *
     * @param retry 1 for the first retry (the second attempt), 2 for the next, …
     */
    public Duration cap(int retry) {
        if (retry < 1) {
            throw new IllegalArgumentException("retry must be at least 1, but was " + retry);
        }
        double nanos = initial.toNanos() * Math.pow(multiplier, retry - 1);
        return nanos >= max.toNanos() ? max : Duration.ofNanos((long) nanos);
    }

    /** The wait before retry {@code retry}: the {@linkplain #cap cap}, or a random time up to it with {@link Jitter#FULL}. */
    public Duration delay(int retry) {
        Duration cap = cap(retry);
        return jitter == Jitter.NONE ? cap : Duration.ofNanos(ThreadLocalRandom.current().nextLong(cap.toNanos() + 1));
    }

    /**
     * Sleeps for {@link #delay delay(retry)} ({@link Sleeper#THREAD_SLEEP}).
     *
     * @return false if the thread was interrupted while waiting (its interrupt flag is set again)
     */
    public boolean sleep(int retry) {
        try {
            Sleeper.THREAD_SLEEP.sleep(delay(retry));
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
