package io.retrysafe.spring;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Outcome;
import io.retrysafe.spi.RetrySafeListener;
import java.util.List;

/** Every {@link RetrySafeListener} bean, in order; the engine guards each call. */
final class CompositeListener implements RetrySafeListener {
    private final List<RetrySafeListener> listeners;

    CompositeListener(List<RetrySafeListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    @Override
    public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
        listeners.forEach(l -> l.onOutcome(key, outcome));
    }

    @Override
    public void onInvalidKey(InvalidKeyException error) {
        listeners.forEach(l -> l.onInvalidKey(error));
    }

    @Override
    public void onTakeover(IdempotencyKey key, int attempt) {
        listeners.forEach(l -> l.onTakeover(key, attempt));
    }

    @Override
    public void onLeaseLost(IdempotencyKey key) {
        listeners.forEach(l -> l.onLeaseLost(key));
    }

    @Override
    public void onStoreError(String storeName, String operation, RuntimeException error) {
        listeners.forEach(l -> l.onStoreError(storeName, operation, error));
    }

    @Override
    public void onStoreLatency(String storeName, String operation, long nanos) {
        listeners.forEach(l -> l.onStoreLatency(storeName, operation, nanos));
    }

    @Override
    public void onCompleterRun(io.retrysafe.PhaseCompleter.Run run) {
        listeners.forEach(l -> l.onCompleterRun(run));
    }
}
