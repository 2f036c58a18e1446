package io.retrysafe.internal;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;

/** Calls a user's listener so that whatever it throws is logged and swallowed, never changing an outcome. */
public final class GuardedListener implements RetrySafeListener {
    private static final System.Logger LOG = System.getLogger("io.retrysafe.RetrySafe");

    private final String engineName;
    private final RetrySafeListener delegate;

    public GuardedListener(String engineName, RetrySafeListener delegate) {
        this.engineName = engineName;
        this.delegate = delegate;
    }

    @Override
    public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
        guard("onOutcome", () -> delegate.onOutcome(key, outcome));
    }

    @Override
    public void onInvalidKey(io.retrysafe.InvalidKeyException error) {
        guard("onInvalidKey", () -> delegate.onInvalidKey(error));
    }

    @Override
    public void onTakeover(IdempotencyKey key, int attempt) {
        guard("onTakeover", () -> delegate.onTakeover(key, attempt));
    }

    @Override
    public void onLeaseLost(IdempotencyKey key) {
        guard("onLeaseLost", () -> delegate.onLeaseLost(key));
    }

    @Override
    public void onStoreError(String storeName, String operation, RuntimeException error) {
        guard("onStoreError", () -> delegate.onStoreError(storeName, operation, error));
    }

    @Override
    public void onStoreLatency(String storeName, String operation, long nanos) {
        guard("onStoreLatency", () -> delegate.onStoreLatency(storeName, operation, nanos));
    }

    @Override
    public void onCompleterRun(io.retrysafe.PhaseCompleter.Run run) {
        guard("onCompleterRun", () -> delegate.onCompleterRun(run));
    }

    private void guard(String method, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + engineName + "] listener " + delegate.getClass().getName() + "."
                    + method + " threw; ignored", e);
        }
    }
}
