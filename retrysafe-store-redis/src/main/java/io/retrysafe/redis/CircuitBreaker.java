package io.retrysafe.redis;

import io.retrysafe.redis.RedisFastFilter.BreakerState;
import java.util.function.LongSupplier;

/**
 * A small circuit breaker. Closed: every call goes through; {@code failureThreshold} consecutive
 * failures open it. Open: no call goes through until the backoff has passed, then it is half open.
 * Half open: one call (the probe) goes through, every other is refused; the probe's success closes
 * the breaker and resets the backoff, its failure opens it again with the backoff doubled, up to
 * its maximum. Time is the injected ticker's (nanoseconds, monotonic).
 *
 * <p>Thread-safe; each method holds the lock for a few field updates only. The transition callback
 * runs outside the lock.
 */
final class CircuitBreaker {

    /** Hears every change of state, once, in order per thread; {@code cause} is null unless a failure caused it. */
    @FunctionalInterface
    interface Transitions {
        void changed(BreakerState from, BreakerState to, int consecutiveFailures, long backoffNanos,
                RuntimeException cause);
    }

    private final int failureThreshold;
    private final long initialBackoffNanos;
    private final long maxBackoffNanos;
    private final LongSupplier ticker;
    private final Transitions transitions;

    // Guarded by this.
    private BreakerState state = BreakerState.CLOSED;
    private int consecutiveFailures;
    private long backoffNanos;
    private long openedAtNanos;

    CircuitBreaker(int failureThreshold, long initialBackoffNanos, long maxBackoffNanos, LongSupplier ticker,
            Transitions transitions) {
        this.failureThreshold = failureThreshold;
        this.initialBackoffNanos = initialBackoffNanos;
        this.maxBackoffNanos = maxBackoffNanos;
        this.ticker = ticker;
        this.transitions = transitions;
        this.backoffNanos = initialBackoffNanos;
    }

    /**
     * Whether a call may go to Redis now. In the open state, the first caller after the backoff
     * turns the breaker half open and is the probe; it must report {@link #onSuccess()} or
     * {@link #onFailure} (every caller that was let through must).
     */
    boolean tryAcquire() {
        int failures;
        long backoff;
        synchronized (this) {
            switch (state) {
                case CLOSED:
                    return true;
                case HALF_OPEN:
                    return false;
                default:
                    if (ticker.getAsLong() - openedAtNanos < backoffNanos) {
                        return false;
                    }
                    state = BreakerState.HALF_OPEN;
                    failures = consecutiveFailures;
                    backoff = backoffNanos;
            }
        }
        transitions.changed(BreakerState.OPEN, BreakerState.HALF_OPEN, failures, backoff, null);
        return true;
    }

    void onSuccess() {
        int failures;
        synchronized (this) {
            if (state == BreakerState.CLOSED) {
                consecutiveFailures = 0;
                return;
            }
            if (state == BreakerState.OPEN) {
                return; // a call let through before the breaker opened; the probe decides
            }
            failures = consecutiveFailures;
            state = BreakerState.CLOSED;
            consecutiveFailures = 0;
            backoffNanos = initialBackoffNanos;
        }
        transitions.changed(BreakerState.HALF_OPEN, BreakerState.CLOSED, failures, initialBackoffNanos, null);
    }

    void onFailure(RuntimeException cause) {
        BreakerState from;
        int failures;
        long backoff;
        synchronized (this) {
            if (state == BreakerState.OPEN) {
                return;
            }
            consecutiveFailures = consecutiveFailures == Integer.MAX_VALUE ? consecutiveFailures : consecutiveFailures + 1;
            if (state == BreakerState.CLOSED) {
                if (consecutiveFailures < failureThreshold) {
                    return;
                }
                backoffNanos = initialBackoffNanos;
            } else {
                backoffNanos = Math.min(backoffNanos * 2, maxBackoffNanos);
            }
            from = state;
            state = BreakerState.OPEN;
            openedAtNanos = ticker.getAsLong();
            failures = consecutiveFailures;
            backoff = backoffNanos;
        }
        transitions.changed(from, BreakerState.OPEN, failures, backoff, cause);
    }

    synchronized BreakerState state() {
        return state;
    }

    /** How long the breaker stays open (the current backoff), in nanoseconds. */
    synchronized long backoffNanos() {
        return backoffNanos;
    }
}
