package io.retrysafe.redis;

import io.retrysafe.Backoff;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import java.util.function.LongSupplier;

/**
 * A small circuit breaker. Closed: every call goes through; {@code failureThreshold} consecutive
 * failures open it. Open: no call goes through until the backoff has passed, then it is half open.
 * Half open: one call (the probe) goes through, every other is refused; the probe's success closes
 * the breaker and resets the backoff, its failure opens it again for the next step of the
 * {@link Backoff} (the n-th opening in a row stays open {@code backoff.delay(n)}). Time is the
 * injected ticker's (nanoseconds, monotonic).
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
    private final Backoff backoff;
    private final LongSupplier ticker;
    private final Transitions transitions;

    // Guarded by this.
    private BreakerState state = BreakerState.CLOSED;
    private int consecutiveFailures;
    /** Openings since the breaker last closed: 1 for the first, one more per failed probe. */
    private int openings;
    private long backoffNanos;
    private long openedAtNanos;

    CircuitBreaker(int failureThreshold, Backoff backoff, LongSupplier ticker, Transitions transitions) {
        this.failureThreshold = failureThreshold;
        this.backoff = backoff;
        this.ticker = ticker;
        this.transitions = transitions;
        this.backoffNanos = backoff.delay(1).toNanos();
    }

    /**
     * Whether a call may go to Redis now. In the open state, the first caller after the backoff
     * turns the breaker half open and is the probe; it must report {@link #onSuccess()} or
     * {@link #onFailure} (every caller that was let through must).
     */
    boolean tryAcquire() {
        int failures;
        long openNanos;
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
                    openNanos = backoffNanos;
            }
        }
        transitions.changed(BreakerState.OPEN, BreakerState.HALF_OPEN, failures, openNanos, null);
        return true;
    }

    void onSuccess() {
        int failures;
        long openNanos;
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
            openings = 0;
            backoffNanos = backoff.delay(1).toNanos();
            openNanos = backoffNanos;
        }
        transitions.changed(BreakerState.HALF_OPEN, BreakerState.CLOSED, failures, openNanos, null);
    }

    void onFailure(RuntimeException cause) {
        BreakerState from;
        int failures;
        long openNanos;
        synchronized (this) {
            if (state == BreakerState.OPEN) {
                return;
            }
            consecutiveFailures = consecutiveFailures == Integer.MAX_VALUE ? consecutiveFailures : consecutiveFailures + 1;
            if (state == BreakerState.CLOSED) {
                if (consecutiveFailures < failureThreshold) {
                    return;
                }
                openings = 1;
            } else if (openings < Integer.MAX_VALUE) {
                openings++;
            }
            backoffNanos = backoff.delay(openings).toNanos();
            from = state;
            state = BreakerState.OPEN;
            openedAtNanos = ticker.getAsLong();
            failures = consecutiveFailures;
            openNanos = backoffNanos;
        }
        transitions.changed(from, BreakerState.OPEN, failures, openNanos, cause);
    }

    synchronized BreakerState state() {
        return state;
    }

    /** How long the breaker stays open (the current backoff), in nanoseconds. */
    synchronized long backoffNanos() {
        return backoffNanos;
    }
}
