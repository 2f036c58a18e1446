package io.retrysafe;

import io.retrysafe.internal.Require;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What either completer ({@link PhaseCompleter}, {@link AsyncPhaseCompleter}) is built from; each value may
 * be set once, each operation registered once.
 *
 * @param <O> the operations it drives
 * @param <B> the completer's own builder, which each setter returns
 */
abstract class CompleterBuilder<O, B extends CompleterBuilder<O, B>> {
    private final Map<String, O> operations = new LinkedHashMap<>();
    private Duration idleFor;
    private Integer batchSize;

    CompleterBuilder() {
    }

    abstract String nameOf(O operation);

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** An operation the completer may find; every phased operation of the engine belongs here. */
    public B register(O operation) {
        Require.notNull(operation, "operation");
        if (operations.putIfAbsent(nameOf(operation), operation) != null) {
            throw new IllegalStateException("operation " + nameOf(operation) + " was already registered");
        }
        return self();
    }

    /**
     * How long an operation nobody holds stays untouched before the completer takes it over;
     * {@link PhaseCompleter#DEFAULT_IDLE_FOR} by default. Longer than clients take to retry, so that a client
     * that comes back finds its own request still running forward.
     */
    public B idleFor(Duration idleFor) {
        Require.unset(this.idleFor, "idleFor");
        this.idleFor = Require.notNegative(idleFor, "idleFor");
        return self();
    }

    public B batchSize(int batchSize) {
        Require.unset(this.batchSize, "batchSize");
        this.batchSize = Require.between(batchSize, 1, 100_000, "batchSize");
        return self();
    }

    /** The registered operations by name, once there is one at least. */
    final Map<String, O> operations() {
        if (operations.isEmpty()) {
            throw new IllegalStateException("a completer needs the operations it may find: register each one");
        }
        return Map.copyOf(operations);
    }

    final Duration idleForOrDefault() {
        return idleFor == null ? PhaseCompleter.DEFAULT_IDLE_FOR : idleFor;
    }

    final int batchSizeOrDefault() {
        return batchSize == null ? PhaseCompleter.DEFAULT_BATCH_SIZE : batchSize;
    }
}
