package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Optional;

/**
 * A cache in front of the store that decides nothing: it can only answer early with what the store
 * already decided (a completed response, a key reused with another request) or refuse a duplicate
 * while the first request is in flight. The store stays the source of truth; whatever a fast path
 * does not know, or cannot reach, goes to the store.
 *
 * <p>Implementations never throw for a failure of their backend: a lookup that fails is a miss, a
 * mark that fails lets the request through, a publish or clear that fails does nothing. Callers
 * still guard every call (a bug in an implementation must not fail a request).
 */
public interface FastPath {

    /**
     * What the fast path knows about {@code key}: a completed response, a reuse with another
     * fingerprint, or a request in flight; empty when it knows nothing or cannot answer.
     */
    Optional<Cached> lookup(IdempotencyKey key, Fingerprint fingerprint);

    /**
     * Marks {@code key} as in flight, unless something is already there. False only when the fast
     * path answered that another request marked (or completed) the key first; true when this caller
     * set the marker, and also when the fast path could not answer (the request goes on to the store).
     */
    boolean markInFlight(IdempotencyKey key, Fingerprint fingerprint);

    /**
     * Caches the response the store committed for {@code key}, for {@code ttl}, replacing the
     * in-flight marker. Call only after the store's outcome is durable.
     */
    void publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response, Duration ttl);

    /** Removes the in-flight marker of {@code key} (after a release or a rollback); a cached response stays. */
    void clear(IdempotencyKey key);

    /**
     * What the fast path knows about {@code key} or, when it knows nothing, the in-flight marker set
     * for this caller: empty means the request goes on to the store (the marker is set, or the fast
     * path could not answer). A fast path that can look and mark in one step overrides this (Redis: one
     * script, one round trip); by default a lookup, a mark, and when another request took the key
     * between the two, a second lookup (a key taken with nothing readable there is in flight).
     */
    default Optional<Cached> lookupOrMark(IdempotencyKey key, Fingerprint fingerprint) {
        Optional<Cached> cached = lookup(key, fingerprint);
        if (cached.isPresent() || markInFlight(key, fingerprint)) {
            return cached;
        }
        Optional<Cached> now = lookup(key, fingerprint);
        return now.isPresent() ? now : Optional.of(new Cached.InFlight());
    }

    /**
     * This fast path for a caller that does not wait: each call sends its command and returns a stage.
     * Whatever a call sends is taken up before anything a later call sends, so a publish the caller
     * did not wait for is seen by the next lookup. By default the blocking calls, each done when its
     * stage is returned.
     */
    default AsyncFastPath async() {
        return new BlockingAsyncFastPath(this);
    }

    /** The fast path's name in logs and metrics. */
    default String name() {
        return getClass().getSimpleName();
    }

    /** What a fast path knows about a key. */
    sealed interface Cached {

        /** Completed with the same fingerprint: this is the response the store committed. */
        record Replay(StoredResponse response) implements Cached {
        }

        /** Completed with another fingerprint: the key was reused for another request. */
        record Mismatch() implements Cached {
        }

        /** Another request holds the key's in-flight marker. */
        record InFlight() implements Cached {
        }
    }
}
