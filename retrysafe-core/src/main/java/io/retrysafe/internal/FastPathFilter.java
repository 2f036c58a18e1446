package io.retrysafe.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.FastPath.Cached;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The decisions of a fast path (Redis) in front of the store, for every stack: what it answers before
 * the store is asked, and what it is told once the store decided. The servlet's and the WebFlux filter's
 * fast-filter executors both decide through it, on a blocking {@link FastPath} or an {@link AsyncFastPath}.
 *
 * <ol>
 * <li>{@link #early}: a cached response with the same fingerprint is replayed, one with another
 * fingerprint is refused (mismatch), an in-flight marker is in progress with the policy's
 * {@code Retry-After}; none of them asks the store. On a miss the in-flight marker is set, in the same
 * step as the lookup where the fast path can ({@link FastPath#lookupOrMark}), so a completed request is
 * never refused as in progress. Only a miss goes on to the store, which claims.
 * <li>{@link #after}, once the store's outcome is durable: a stored result, or a replay the store
 * answered, is published; anything else (released, refused, failed, a failed commit) clears the marker.
 * The caller need not wait for it: the fast path takes it up before any later lookup.
 * </ol>
 *
 * A published response lives for what is left of the retention, at most the replay TTL. With local replays
 * ({@link #withLocalReplays}), what is published or replayed is also kept in this process and answers the key's
 * next retry before the fast path is asked. The fast path never fails a request: whatever it throws or fails
 * with is logged and taken as a miss (a lookup), as letting the request through (a mark), or as done (a publish
 * or clear). Not API.
 */
public final class FastPathFilter {
    /** The longest a published response lives in the fast path (bounds memory and a warmed entry's overshoot). */
    public static final Duration DEFAULT_REPLAY_TTL = Duration.ofHours(1);

    private static final System.Logger LOG = System.getLogger(FastPathFilter.class.getName());

    private final AsyncFastPath fastPath;
    private final String engineName;
    private final RetrySafeListener listener;
    private final Duration replayTtl;
    private final LongSupplier nanoTime;
    /** Null without a local tier. */
    private final LocalReplays local;

    private FastPathFilter(AsyncFastPath fastPath, String engineName, RetrySafeListener listener, Duration replayTtl,
            LongSupplier nanoTime, LocalReplays local) {
        this.fastPath = fastPath;
        this.engineName = engineName;
        this.listener = listener;
        this.replayTtl = replayTtl;
        this.nanoTime = nanoTime;
        this.local = local;
    }

    /** On a non-blocking fast path: each step is chained on the one before, no thread waits. */
    public static FastPathFilter of(AsyncFastPath fastPath, String engineName, RetrySafeListener listener,
            Duration replayTtl, LongSupplier nanoTime) {
        return new FastPathFilter(fastPath, engineName, listener, replayTtl, nanoTime, null);
    }

    /**
     * On a blocking fast path, through its {@link FastPath#async() non-blocking face}: a blocking caller
     * waits for {@link #early}'s stage, and not for the publish or clear of {@link #after}, which the fast
     * path takes up before any later lookup. A fast path without such a face answers on the caller's thread.
     */
    public static FastPathFilter of(FastPath fastPath, String engineName, RetrySafeListener listener,
            Duration replayTtl, LongSupplier nanoTime) {
        return new FastPathFilter(fastPath.async(), engineName, listener, replayTtl, nanoTime, null);
    }

    /**
     * This filter with completed responses also kept in this process, up to {@code maxBytes} in all, each for at
     * most {@code ttl} (and never beyond what the fast path would keep it): a key answered here is answered again
     * without asking the fast path. Without a local tier when {@code maxBytes} is 0.
     */
    public FastPathFilter withLocalReplays(long maxBytes, Duration ttl) {
        return new FastPathFilter(fastPath, engineName, listener, replayTtl, nanoTime,
                maxBytes == 0 ? null : new LocalReplays(maxBytes, ttl));
    }

    /** The most the local tier holds, in bytes; 0 without one. */
    public long localMaxBytes() {
        return local == null ? 0 : local.maxBytes();
    }

    /** The longest the local tier keeps a response; zero without one. */
    public Duration localTtl() {
        return local == null ? Duration.ZERO : local.ttl();
    }

    /** The clock's reading when the store is asked, for {@link #after}. */
    public long start() {
        return nanoTime.getAsLong();
    }

    /**
     * The answer the fast path gives without the store, or empty when the store must decide; the
     * listener hears the answers given here. Never fails.
     */
    public CompletionStage<Optional<Outcome<StoredResponse>>> early(IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy) {
        Optional<Outcome<StoredResponse>> here = local(key, fingerprint, policy);
        if (here.isPresent()) {
            return CompletableFuture.completedFuture(here);
        }
        // One step where the fast path can (a script): what the key holds, or the marker set for this request.
        return guard("lookupOrMark", key, () -> fastPath.lookupOrMark(key, fingerprint), Optional.<Cached>empty())
                .thenApply(cached -> cached == null || cached.isEmpty() ? Optional.<Outcome<StoredResponse>>empty()
                        : Optional.of(answer(key, early(opened(key, kept(key, fingerprint, policy, cached.get()),
                                policy), policy))))
                .exceptionally(failure -> {
                    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                            ? failure.getCause() : failure;
                    if (cause instanceof StoredResponseUnreadableException) {
                        // The cached copy does not open (its key id is no longer configured, or it was altered):
                        // the store decides, and a replay it answers replaces the cached copy.
                        LOG.log(Level.WARNING, () -> "[" + engineName + "] cached response of key " + key.digest()
                                + " cannot be opened; asking the store: " + cause.getMessage());
                    } else {
                        LOG.log(Level.WARNING, () -> "[" + engineName + "] fast path " + fastPath.name()
                                + " failed on key " + key.digest() + "; asking the store", cause);
                    }
                    return Optional.empty();
                });
    }

    /**
     * Tells the fast path what the store decided, once it is durable ({@code outcome} null when the store
     * or the operation failed): a stored result or a replay is published, anything else clears the marker.
     * Never fails.
     *
     * @param start what {@link #start} read before the store was asked
     */
    public CompletionStage<Void> after(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy,
            Outcome<StoredResponse> outcome, long start) {
        if (outcome instanceof Outcome.Executed<StoredResponse> executed
                && executed.completion() == Outcome.Completion.STORED) {
            // The record's expiry is at least start + retention (it completed after start).
            Duration left = policy.retention().minusNanos(nanoTime.getAsLong() - start);
            return publish(key, fingerprint, policy, executed.value(), left.compareTo(replayTtl) < 0 ? left : replayTtl);
        } else if (outcome instanceof Outcome.Replayed<StoredResponse> replayed) {
            Duration retention = policy.retention();
            return publish(key, fingerprint, policy, replayed.value(),
                    retention.compareTo(replayTtl) < 0 ? retention : replayTtl);
        }
        return guard("clear", key, () -> fastPath.clear(key), null);
    }

    /** The answer the local tier has for {@code key}: a replay, or a mismatch; empty when it has none. */
    private Optional<Outcome<StoredResponse>> local(IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy) {
        LocalReplays.Entry entry = local == null ? null : local.get(key, nanoTime.getAsLong());
        if (entry == null) {
            return Optional.empty();
        }
        if (!entry.fingerprint().equals(fingerprint)) {
            return Optional.of(answer(key, new Outcome.FingerprintMismatch<>()));
        }
        StoredResponse response;
        try {
            response = policy.protection().open(key, entry.sealed());
        } catch (StoredResponseUnreadableException e) {
            // Its key id is no longer configured: the fast path and the store decide, as for their own copies.
            local.remove(key);
            return Optional.empty();
        }
        return Optional.of(answer(key, new Outcome.Replayed<>(response)));
    }

    /**
     * A response the fast path replayed is kept here too, for the local tier's TTL at most, and never longer than the
     * retention: how long the fast path's copy has left is not known.
     */
    private Cached kept(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy, Cached cached) {
        if (local != null && cached instanceof Cached.Replay replay) {
            Duration retention = policy.retention();
            local.put(key, fingerprint, replay.response(), retention.compareTo(replayTtl) < 0 ? retention : replayTtl,
                    nanoTime.getAsLong());
        }
        return cached;
    }

    private static Outcome<StoredResponse> early(Cached cached, OperationPolicy policy) {
        if (cached instanceof Cached.Replay replay) {
            return new Outcome.Replayed<>(replay.response());
        } else if (cached instanceof Cached.Mismatch) {
            return new Outcome.FingerprintMismatch<>();
        }
        return new Outcome.InProgress<>(policy.retryAfter());
    }

    private Outcome<StoredResponse> answer(IdempotencyKey key, Outcome<StoredResponse> outcome) {
        try {
            listener.onOutcome(key, outcome);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + engineName + "] listener " + listener.getClass().getName()
                    + ".onOutcome threw; ignored", e);
        }
        return outcome;
    }

    /** A cached response opened with the policy's protection; throws {@link StoredResponseUnreadableException} if it does not open. */
    private static Cached opened(IdempotencyKey key, Cached cached, OperationPolicy policy) {
        return cached instanceof Cached.Replay replay
                ? new Cached.Replay(policy.protection().open(key, replay.response())) : cached;
    }

    /** Cached as the store holds it: sealed by the policy's protection (encrypted, redacted), never in the clear. */
    private CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy,
            StoredResponse response, Duration ttl) {
        if (ttl.isNegative() || ttl.isZero()) {
            return guard("clear", key, () -> fastPath.clear(key), null);
        }
        StoredResponse sealed = policy.protection().seal(key, response);
        if (local != null) {
            local.put(key, fingerprint, sealed, ttl, nanoTime.getAsLong());
        }
        return guard("publish", key, () -> fastPath.publish(key, fingerprint, sealed, ttl), null);
    }

    /** A call that can neither throw nor fail its stage: either is logged, and is {@code otherwise}. */
    private <T> CompletionStage<T> guard(String operation, IdempotencyKey key, Supplier<CompletionStage<T>> call,
            T otherwise) {
        CompletionStage<T> stage;
        try {
            stage = call.get();
        } catch (RuntimeException e) {
            warn(operation, key, e);
            return CompletableFuture.completedFuture(otherwise);
        }
        if (stage == null) {
            return CompletableFuture.completedFuture(otherwise);
        }
        return stage.exceptionally(e -> {
            warn(operation, key, e);
            return otherwise;
        });
    }

    private void warn(String operation, IdempotencyKey key, Throwable e) {
        LOG.log(Level.WARNING, () -> "[" + engineName + "] fast path " + fastPath.name() + " threw on " + operation
                + " of key " + key.digest() + "; going on without it", e);
    }

    /**
     * What the fast-filter executors' builders share: the replay TTL and the clock, each settable once, and
     * the executor's own checks of its delegate.
     *
     * @param <B> the executor's builder
     */
    public abstract static class Builder<B extends Builder<B>> {
        private Duration replayTtl;
        private LongSupplier nanoTime;
        private Long localReplaysMaxBytes;
        private Duration localReplaysTtl;

        /**
         * @param delegate the executor that decides
         * @param alreadyFiltered whether {@code delegate} is already a fast-filter executor of this kind
         */
        protected Builder(Object delegate, boolean alreadyFiltered, Object fastPath, Object engine) {
            Require.notNull(delegate, "delegate");
            Require.notNull(fastPath, "fastPath");
            Require.notNull(engine, "engine");
            if (alreadyFiltered) {
                throw new IllegalArgumentException("delegate must be the executor that decides, but was already a "
                        + delegate.getClass().getSimpleName());
            }
        }

        @SuppressWarnings("unchecked")
        private B self() {
            return (B) this;
        }

        /**
         * The longest a published response lives in the fast path (1 h by default); shorter when less
         * of the retention is left. Bounds the fast path's memory to the responses of this window.
         */
        public B replayTtl(Duration replayTtl) {
            Require.unset(this.replayTtl, "replayTtl");
            this.replayTtl = Require.atLeastOneMilli(replayTtl, "replayTtl");
            return self();
        }

        /**
         * Completed responses also kept in this process, up to {@code maxBytes} in all (the least recently used
         * dropped first), each for at most {@code ttl}: a retry of a key this process stored or replayed a moment
         * ago is answered again from memory, without a round trip to the fast path. Only committed responses are
         * kept, never an in-flight marker. A copy this process stored lives no longer than its record; one it
         * replayed from the fast path may outlive the fast path's copy by at most {@code ttl}. Off by default.
         */
        public B localReplays(long maxBytes, Duration ttl) {
            Require.unset(this.localReplaysTtl, "localReplays");
            if (maxBytes < 0) {
                throw new IllegalArgumentException("maxBytes must not be negative, but was " + maxBytes);
            }
            this.localReplaysTtl = Require.atLeastOneMilli(ttl, "ttl");
            this.localReplaysMaxBytes = maxBytes;
            return self();
        }

        /** The clock that measures how much of the retention is left ({@code System::nanoTime} by default). */
        public B nanoTime(LongSupplier nanoTime) {
            Require.unset(this.nanoTime, "nanoTime");
            this.nanoTime = Require.notNull(nanoTime, "nanoTime");
            return self();
        }

        /** The replay TTL set, or the default. */
        protected final Duration replayTtl() {
            return replayTtl == null ? DEFAULT_REPLAY_TTL : replayTtl;
        }

        /** The clock set, or {@code System::nanoTime}. */
        protected final LongSupplier nanoTime() {
            return nanoTime == null ? System::nanoTime : nanoTime;
        }

        /** {@code filter} with the local tier set, or as it is without one. */
        protected final FastPathFilter withLocalReplays(FastPathFilter filter) {
            return localReplaysTtl == null ? filter : filter.withLocalReplays(localReplaysMaxBytes, localReplaysTtl);
        }
    }
}
