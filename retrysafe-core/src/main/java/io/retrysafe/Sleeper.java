package io.retrysafe;

import java.time.Duration;

/**
 * How a back-off waits. Every wait between two attempts in RetrySafe goes through one, so that a test
 * can record the waits and return at once instead of sleeping.
 */
@FunctionalInterface
public interface Sleeper {
    /** {@link Thread#sleep(long, int)}: blocks the calling thread, and ends early when it is interrupted. */
    Sleeper THREAD_SLEEP = duration -> Thread.sleep(duration.toMillis(), duration.toNanosPart() % 1_000_000);

    /**
     * Waits for {@code duration} (never negative).
     *
     * @throws InterruptedException if the wait is interrupted
     */
    void sleep(Duration duration) throws InterruptedException;
}
