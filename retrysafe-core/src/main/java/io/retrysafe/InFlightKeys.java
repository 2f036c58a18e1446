package io.retrysafe;

import io.retrysafe.internal.Require;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The keys in flight on this instance, by (scope, key), each with the fingerprint of the request
 * that holds it. A duplicate of a request in flight here is answered from memory, before it takes a
 * connection or touches the store: otherwise thirty copies of one slow request each hold a pooled
 * connection while they wait on the key, and every other user of the pool waits for them.
 *
 * <p>What it may answer without the store is only what the store would answer too: a request with
 * the same fingerprint as the one in flight waits for it (up to a bound, then goes on to the store,
 * which replays) or is told the key is in progress. A request with another fingerprint is not
 * refused here: the stored record decides a mismatch (the request in flight may itself be refused
 * as a mismatch, and the other one be a retry of what the record holds), so it goes on to the store.
 *
 * <p>Across instances the store stays the only shared state. One registry per engine, shared by its
 * {@link RetrySafe#with} copies; thread-safe.
 */
public final class InFlightKeys {
    private final ConcurrentMap<IdempotencyKey, Holder> holders = new ConcurrentHashMap<>();
    private final AtomicInteger waiting = new AtomicInteger();

    /** Requests holding a key on this instance now. */
    public int size() {
        return holders.size();
    }

    /** Duplicates waiting on this instance, without a connection, for a request in flight to end. */
    public int waiting() {
        return waiting.get();
    }

    /**
     * Admits a request of {@code key}: it becomes the key's holder here ({@link Admission.Entered},
     * to be closed on every way out), or, when a request of the same fingerprint holds the key, waits
     * up to {@code wait} for it to end and tries again ({@link Admission.Busy} past the bound), or, when
     * the holder's request is another one, passes it on to the store unregistered ({@link Admission.Unguarded}).
     */
    public Admission admit(IdempotencyKey key, Fingerprint fingerprint, Duration wait) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(wait, "wait");
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            Holder mine = new Holder(fingerprint);
            Holder current = holders.putIfAbsent(key, mine);
            if (current == null) {
                return new Admission.Entered(this, key, mine);
            }
            if (!current.fingerprint.matches(fingerprint)) {
                return Admission.UNGUARDED;
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return Admission.BUSY;
            }
            waiting.incrementAndGet();
            try {
                if (!current.done.await(remaining, TimeUnit.NANOSECONDS)) {
                    return Admission.BUSY;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Admission.BUSY;
            } finally {
                waiting.decrementAndGet();
            }
        }
    }

    private void exit(IdempotencyKey key, Holder holder) {
        holders.remove(key, holder);
        holder.done.countDown();
    }

    private static final class Holder {
        final Fingerprint fingerprint;
        final CountDownLatch done = new CountDownLatch(1);

        Holder(Fingerprint fingerprint) {
            this.fingerprint = fingerprint;
        }
    }

    /** What {@link #admit} decided. Closing is a no-op except for {@link Entered}, whose key it frees. */
    public sealed interface Admission extends AutoCloseable {
        Admission BUSY = new Busy();
        Admission UNGUARDED = new Unguarded();

        @Override
        default void close() {
        }

        /** This request holds the key on this instance until closed (once; later closes do nothing). */
        final class Entered implements Admission {
            private final InFlightKeys keys;
            private final IdempotencyKey key;
            private final Holder holder;
            private final AtomicBoolean closed = new AtomicBoolean();

            private Entered(InFlightKeys keys, IdempotencyKey key, Holder holder) {
                this.keys = keys;
                this.key = key;
                this.holder = holder;
            }

            @Override
            public void close() {
                if (closed.compareAndSet(false, true)) {
                    keys.exit(key, holder);
                }
            }
        }

        /** A request of the same fingerprint holds the key here, and did not end within the wait: in progress. */
        record Busy() implements Admission {
        }

        /** Another request holds the key here: the store decides this one. */
        record Unguarded() implements Admission {
        }
    }
}
