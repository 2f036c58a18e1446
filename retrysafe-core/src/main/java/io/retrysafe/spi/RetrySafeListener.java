package io.retrysafe.spi;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;

/**
 * Hears what the engine does, for metrics and tracing. Every method does nothing by default; an
 * exception a listener throws is logged and swallowed, never allowed to change an outcome. Keys
 * are passed for correlation: do not use them as metric tags (unbounded cardinality) or log them
 * raw ({@link IdempotencyKey#digest()} is safe).
 */
public interface RetrySafeListener {

    RetrySafeListener NONE = new RetrySafeListener() {
    };

    /** Called once per {@code execute} with the outcome it returns. */
    default void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
    }

    /**
     * A request was refused before reaching the engine because its key was missing or broke a rule
     * ({@link io.retrysafe.InvalidKeyException#rule()} says which); called by HTTP and messaging adapters.
     */
    default void onInvalidKey(io.retrysafe.InvalidKeyException error) {
    }

    /** A claim took over a record whose earlier attempt was released or lost its lease. */
    default void onTakeover(IdempotencyKey key, int attempt) {
    }

    /** A completion was refused because another attempt holds the key now. */
    default void onLeaseLost(IdempotencyKey key) {
    }

    /** A store call failed. */
    default void onStoreError(String storeName, String operation, RuntimeException error) {
    }

    /** A store call took {@code nanos}; {@code operation} is {@code claim}, {@code complete} or {@code release}. */
    default void onStoreLatency(String storeName, String operation, long nanos) {
    }

    /**
     * A {@link io.retrysafe.PhaseCompleter} ran (or found another instance running and did nothing):
     * what it found and how each operation ended.
     */
    default void onCompleterRun(io.retrysafe.PhaseCompleter.Run run) {
    }
}
