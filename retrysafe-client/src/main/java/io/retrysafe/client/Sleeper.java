package io.retrysafe.client;

import java.time.Duration;

/**
 * Waits between two attempts of a {@link RetryingClient}. The default, {@link #THREAD_SLEEP},
 * blocks the calling thread; a test injects one that records the durations and returns at once.
 */
@FunctionalInterface
public interface Sleeper {
    /** {@link Thread#sleep(long, int)}: blocks the calling thread, and ends early when it is interrupted. */
    Sleeper THREAD_SLEEP = duration -> Thread.sleep(duration.toMillis(), duration.toNanosPart() % 1_000_000);

    /**
     * Waits for {@code duration} (never negative, never longer than the client's {@code maxBackoff}).
     *
     * @throws InterruptedException if the wait is interrupted; the client then gives up and rethrows it
     */
    void sleep(Duration duration) throws InterruptedException;
}
