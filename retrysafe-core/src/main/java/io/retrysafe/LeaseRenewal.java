package io.retrysafe;

import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The heartbeat of an attempt in standalone mode: every {@link #SHARE} of the lease, the lease is
 * renewed to a whole {@code leaseTtl} from now, fenced by the attempt's token, so that an operation
 * slower than its lease is not taken over (and run a second time) while it is still running. It
 * stops when the attempt's outcome is written, or when the store answers that the token no longer
 * holds the key. A renewal that fails is logged and tried again at the next beat: the lease still
 * runs out on its own if the store stays away.
 */
final class LeaseRenewal implements AutoCloseable {
    /** Renew after a third of the lease: two beats may fail before another attempt may take over. */
    static final int SHARE = 3;

    private static final System.Logger LOG = System.getLogger(RetrySafe.class.getName());

    private static final LeaseRenewal NONE = new LeaseRenewal(null);

    private final ScheduledFuture<?> beat;

    private LeaseRenewal(ScheduledFuture<?> beat) {
        this.beat = beat;
    }

    /**
     * Starts renewing {@code key}'s lease every {@code leaseTtl / SHARE}; {@code renew} is one fenced
     * store call, whose stage a beat does not wait for (on a non-blocking store, no thread waits
     * for the store). Nothing is scheduled when {@code enabled} is false (a store that cannot renew, or
     * one bound to the operation's transaction, where nobody else can take the key over).
     */
    static LeaseRenewal start(boolean enabled, String engine, IdempotencyKey key, OwnerToken token, Duration leaseTtl,
            Supplier<CompletionStage<FencedWrite>> renew) {
        if (!enabled) {
            return NONE;
        }
        long period = Math.max(1, leaseTtl.toMillis() / SHARE);
        ScheduledFuture<?>[] self = new ScheduledFuture<?>[1];
        Runnable beat = () -> {
            CompletionStage<FencedWrite> renewal;
            try {
                renewal = renew.get();
            } catch (RuntimeException e) {
                renewal = CompletableFuture.failedFuture(e);
            }
            renewal.whenComplete((renewed, failure) -> {
                if (failure != null) {
                    LOG.log(Level.WARNING, () -> "[" + engine + "] could not renew the lease of key " + key.digest()
                            + "; trying again in " + period + " ms: " + EngineCore.unwrap(failure));
                } else if (renewed instanceof FencedWrite.LeaseLost) {
                    LOG.log(Level.WARNING, () -> "[" + engine + "] key " + key.digest() + " is no longer held by this "
                            + "attempt (" + token + "); its lease is not renewed any more");
                    synchronized (self) {
                        self[0].cancel(false);
                    }
                }
            });
        };
        synchronized (self) {
            self[0] = EngineCore.TIMER.scheduleAtFixedRate(beat, period, period, TimeUnit.MILLISECONDS);
        }
        return new LeaseRenewal(self[0]);
    }

    /** Stops the heartbeat; a beat under way finishes (it is fenced, so a late one changes nothing once completed). */
    @Override
    public void close() {
        if (beat != null) {
            beat.cancel(false);
        }
    }
}
