package io.retrysafe;

import java.time.Duration;

/**
 * What {@link RetrySafe#execute} decided. Races are values: the caller sees which of the outcomes
 * of the design's table happened, and {@link #orThrow()} turns the refusals into exceptions where a
 * boundary must throw.
 */
public sealed interface Outcome<T> {

    /** This attempt ran the operation. */
    record Executed<T>(T value, Attempt attempt, Completion completion) implements Outcome<T> {
    }

    /** An earlier attempt completed; its stored response is returned and the operation did not run. */
    record Replayed<T>(T value) implements Outcome<T> {
    }

    /** Another attempt holds the key and did not finish within the wait bound; the operation did not run. */
    record InProgress<T>(Duration retryAfter) implements Outcome<T> {
    }

    /** The key was used before with another request; the operation did not run. */
    record FingerprintMismatch<T>() implements Outcome<T> {
    }

    /** The store failed; the operation did not run (fail closed). */
    record StoreUnavailable<T>(StoreUnavailableException failure) implements Outcome<T> {

        public Duration retryAfter() {
            return failure.retryAfter();
        }
    }

    /**
     * The store failed and the engine is configured to fail open: the operation ran without
     * protection and nothing was recorded.
     */
    record Unprotected<T>(T value, RuntimeException storeFailure) implements Outcome<T> {
    }

    /** What became of the result of an attempt that ran. */
    enum Completion {
        /** Stored; retries replay it. */
        STORED,
        /** The outcome policy released the key; a retry runs the operation again. */
        RELEASED,
        /**
         * Another attempt took the key over after this attempt's lease expired; this result was
         * refused by the store and the other attempt's answer is the one retries will see.
         */
        LEASE_LOST
    }

    /** The value for {@link Executed}, {@link Replayed} and {@link Unprotected}; the matching exception otherwise. */
    default T orThrow() {
        if (this instanceof Executed<T> e) {
            return e.value();
        } else if (this instanceof Replayed<T> r) {
            return r.value();
        } else if (this instanceof Unprotected<T> u) {
            return u.value();
        } else if (this instanceof InProgress<T> p) {
            throw new InProgressException("another request with this idempotency key is in progress", p.retryAfter());
        } else if (this instanceof FingerprintMismatch<T>) {
            throw new FingerprintMismatchException("idempotency key was already used with a different request");
        } else if (this instanceof StoreUnavailable<T> s) {
            throw s.failure();
        }
        throw new IllegalStateException("unknown outcome " + this);
    }

    /** True when this answer came from an earlier attempt ({@code Idempotent-Replayed: true} over HTTP). */
    default boolean isReplay() {
        return this instanceof Replayed;
    }
}
