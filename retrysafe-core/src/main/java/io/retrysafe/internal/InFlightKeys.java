package io.retrysafe.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The keys in flight on this instance, by (scope, key), each with the fingerprint of the request
 * that holds it. A duplicate of a request in flight here is answered from memory, before it takes a
 * connection or touches the store: otherwise thirty copies of one slow request each hold a pooled
 * connection while they wait on the key, and every other user of the pool waits for them.
 *
 * <p>What it may answer without the store is only what the store would answer too: a request with
 * the same fingerprint as the one in flight waits for it (up to a bound) or is told the key is in
 * progress. When the request it waited for ended with its answer stored, every duplicate waiting is let go
 * at once: given that answer where the holder left it ({@link Admission.Answered}: the engine replays it as
 * the store would, without a store call), or else on to the store, which replays the answer to each (a store
 * reads a completed record without taking turns on it). When it ended otherwise (released, failed), the key
 * may run again, so the duplicates take turns holding it. A request with another fingerprint is not
 * refused here: the stored record decides a mismatch (the request in flight may itself be refused
 * as a mismatch, and the other one be a retry of what the record holds), so it goes on to the store.
 *
 * <p>Across instances the store stays the only shared state. One registry per engine, shared by its
 * {@link io.retrysafe.RetrySafe#with} copies and by the asynchronous engine it makes
 * ({@link io.retrysafe.RetrySafe#withAsyncStore}), which admits without blocking ({@link #admitAsync});
 * thread-safe. RetrySafe's modules reach an engine's registry through {@link Engines#inFlight}.
 */
public final class InFlightKeys {
    private final ConcurrentMap<IdempotencyKey, Holder> holders = new ConcurrentHashMap<>();
    private final AtomicInteger waiting = new AtomicInteger();
    private final ScheduledExecutorService timer;

    /** @param timer where the bound of a wait that blocks no thread ({@link #admitAsync}) is scheduled */
    public InFlightKeys(ScheduledExecutorService timer) {
        this.timer = Require.notNull(timer, "timer");
    }

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
     * the holder's request is another one or ended {@linkplain Admission.Entered#answered() answered}, passes
     * it on to the store unregistered ({@link Admission.Unguarded}); a holder that left its answer
     * ({@link Admission.Entered#answered(Object)}) gives it to its waiting duplicates ({@link Admission.Answered}).
     */
    public Admission admit(IdempotencyKey key, Fingerprint fingerprint, Duration wait) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(wait, "wait");
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            Turn turn = turn(key, fingerprint);
            if (turn.decided() != null) {
                return turn.decided();
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                return Admission.BUSY;
            }
            waiting.incrementAndGet();
            try {
                if (turn.holder().done.get(remaining, TimeUnit.NANOSECONDS)) {
                    Object answer = turn.holder().answer;
                    return answer == null ? Admission.UNGUARDED : new Admission.Answered(answer);
                }
            } catch (TimeoutException e) {
                return Admission.BUSY;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Admission.BUSY;
            } catch (ExecutionException e) {
                throw new IllegalStateException("a holder's end never fails", e);
            } finally {
                waiting.decrementAndGet();
            }
        }
    }

    /**
     * {@link #admit} without blocking: the returned stage completes with the admission. A duplicate
     * waits by chaining on the end of the request holding the key, and goes on on the thread that ends
     * it; its bound is scheduled on the engine's timer. A caller that gives up cancels (or completes)
     * the returned stage: its wait ends then, and a key it would have entered afterwards is freed at once.
     * A holder's answer is not handed on here: the duplicates go on to the store ({@link Admission.Unguarded}).
     */
    public CompletableFuture<Admission> admitAsync(IdempotencyKey key, Fingerprint fingerprint, Duration wait) {
        Require.notNull(key, "key");
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(wait, "wait");
        CompletableFuture<Admission> admission = new CompletableFuture<>();
        admitInto(admission, key, fingerprint, System.nanoTime() + wait.toNanos(), false);
        return admission;
    }

    private void admitInto(CompletableFuture<Admission> admission, IdempotencyKey key, Fingerprint fingerprint,
            long deadline, boolean bounded) {
        if (admission.isDone()) {
            return;
        }
        Turn turn = turn(key, fingerprint);
        if (turn.decided() != null) {
            if (!admission.complete(turn.decided())) {
                turn.decided().close();
            }
            return;
        }
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
            admission.complete(Admission.BUSY);
            return;
        }
        if (!bounded) {
            // One bound for every wait of this admission. It is never cancelled, and fires as a no-op
            // once the admission is decided: a cancel from the thread ending a holder (a driver's event
            // loop) would take the timer queue's lock there.
            timer.schedule(() -> admission.complete(Admission.BUSY), remaining, TimeUnit.NANOSECONDS);
        }
        waiting.incrementAndGet();
        // This wait ends once: the holder ended, or the admission was decided (the bound passed, the caller gave up).
        AtomicBoolean over = new AtomicBoolean();
        admission.whenComplete((decided, failure) -> {
            if (over.compareAndSet(false, true)) {
                waiting.decrementAndGet();
            }
        });
        turn.holder().done.thenAccept(answered -> {
            if (over.compareAndSet(false, true)) {
                waiting.decrementAndGet();
                if (answered) {
                    admission.complete(Admission.UNGUARDED);
                } else {
                    admitInto(admission, key, fingerprint, deadline, true);
                }
            }
        });
    }

    /** One try at the key: an admission decided now, or the holder of the same fingerprint to wait for. */
    private Turn turn(IdempotencyKey key, Fingerprint fingerprint) {
        Holder mine = new Holder(fingerprint);
        Holder current = holders.putIfAbsent(key, mine);
        if (current == null) {
            return new Turn(new Admission.Entered(this, key, mine), null);
        }
        if (!current.fingerprint.matches(fingerprint)) {
            return new Turn(Admission.UNGUARDED, null);
        }
        return new Turn(null, current);
    }

    private record Turn(Admission decided, Holder holder) {
    }

    private void exit(IdempotencyKey key, Holder holder) {
        holders.remove(key, holder);
        holder.done.complete(holder.answered);
    }

    private static final class Holder {
        final Fingerprint fingerprint;
        /** Completes (normally, always) once the holder has left the registry: whether it left answered. */
        final CompletableFuture<Boolean> done = new CompletableFuture<>();
        /** Set before the holder leaves, by the thread that holds it. */
        volatile boolean answered;
        /** Set, if at all, before {@link #answered}: the answer its waiting duplicates are given. */
        volatile Object answer;

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

            /**
             * Says, before {@link #close()}, that this request's answer is stored: the duplicates waiting for it
             * go on to the store together, which replays it, instead of each holding the key in turn.
             */
            public void answered() {
                holder.answered = true;
            }

            /**
             * {@link #answered()}, leaving the answer itself (the engine's, opaque here): the duplicates that waited
             * for this request are given it ({@link Answered}) instead of asking the store, which would replay it.
             */
            public void answered(Object answer) {
                holder.answer = Require.notNull(answer, "answer");
                holder.answered = true;
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

        /**
         * The request this one waited for ended with its answer stored, and left it here: the answer the store
         * would replay to this one. Registered nowhere: as {@link Unguarded} if it goes on to the store after all.
         */
        record Answered(Object answer) implements Admission {
        }
    }
}
