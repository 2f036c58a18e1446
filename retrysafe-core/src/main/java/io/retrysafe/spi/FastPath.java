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
