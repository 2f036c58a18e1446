package io.retrysafe.jdbc;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The pause between two batches of a purge: a batch that took t is followed by t × (1/share − 1), so
 * that the run is busy at most {@code share} of its time. Proportional rather than fixed: a database
 * under load makes each batch slower, and the pause after it grows with it.
 */
final class BatchPacing {
    /** How a pause is taken; the real one sleeps, and an interrupt ends the pause and the run. */
    interface Sleeper {
        void sleep(long nanos) throws InterruptedException;
    }

    static final Sleeper SLEEP = TimeUnit.NANOSECONDS::sleep;

    private final double factor;
    private final LongSupplier nanoTime;
    private final Sleeper sleeper;

    BatchPacing(double share, LongSupplier nanoTime, Sleeper sleeper) {
        this.factor = 1 / share - 1;
        this.nanoTime = nanoTime;
        this.sleeper = sleeper;
    }

    long now() {
        return nanoTime.getAsLong();
    }

    /** The pause after a batch of {@code batchNanos}; a saturating cast keeps a tiny share from overflowing. */
    long pauseNanos(long batchNanos) {
        return (long) (Math.max(0, batchNanos) * factor);
    }

    /**
     * Pauses after a batch that began at {@code batchStart}. False when the thread is interrupted, before
     * or during the pause: the run stops there. The interrupt flag is cleared, so that the run's last
     * statements (the unlock) see none; the caller sets it again once it has let go of the database.
     */
    boolean pauseAfter(long batchStart) {
        if (Thread.interrupted()) {
            return false;
        }
        long pause = pauseNanos(now() - batchStart);
        if (pause > 0) {
            try {
                sleeper.sleep(pause);
            } catch (InterruptedException e) {
                return false;
            }
        }
        return true;
    }
}
