package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.FastPath.Cached;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * {@link FastPath} for a non-blocking stack: the same cache that decides nothing, each answer
 * delivered by a {@link CompletionStage}. A method returns at once without blocking the calling
 * thread; the stage may complete on any thread (a driver's event loop), so what the caller chains on
 * it must not block either.
 *
 * <p>As with {@link FastPath}, a failure of the backend is never a failed stage: a lookup that fails
 * is a miss (empty), a mark that fails is {@code true} (the request goes on to the store), a publish
 * or clear that fails completes normally having done nothing. Callers still guard every stage (a bug
 * in an implementation must not fail a request).
 */
public interface AsyncFastPath {

    /** {@link FastPath#lookup}: what the fast path knows about {@code key}; empty when it knows nothing or cannot answer. */
    CompletionStage<Optional<Cached>> lookup(IdempotencyKey key, Fingerprint fingerprint);

    /** {@link FastPath#markInFlight}: false only when another request marked (or completed) the key first. */
    CompletionStage<Boolean> markInFlight(IdempotencyKey key, Fingerprint fingerprint);

    /** {@link FastPath#publish}: caches the committed response for {@code ttl}, replacing the marker. */
    CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response, Duration ttl);

    /** {@link FastPath#clear}: removes the in-flight marker of {@code key}; a cached response stays. */
    CompletionStage<Void> clear(IdempotencyKey key);

    /**
     * {@link FastPath#lookupOrMark}: what the fast path knows about {@code key}, or empty once the
     * in-flight marker is set for this caller (or the fast path could not answer). By default a lookup,
     * a mark and, when another request took the key between the two, a second lookup.
     */
    default CompletionStage<Optional<Cached>> lookupOrMark(IdempotencyKey key, Fingerprint fingerprint) {
        return lookup(key, fingerprint).thenCompose(cached -> cached.isPresent()
                ? CompletableFuture.completedFuture(cached)
                : markInFlight(key, fingerprint).thenCompose(marked -> marked
                        ? CompletableFuture.completedFuture(cached)
                        : lookup(key, fingerprint).thenApply(now -> now.isPresent() ? now
                                : Optional.<Cached>of(new Cached.InFlight()))));
    }

    /** The fast path's name in logs and metrics. */
    default String name() {
        return getClass().getSimpleName();
    }
}
