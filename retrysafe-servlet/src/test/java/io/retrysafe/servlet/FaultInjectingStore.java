package io.retrysafe.servlet;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.time.Duration;
import java.util.Optional;

/** A real store that fails on demand, as an unreachable database or Redis would: fault injection, not a mock. */
final class FaultInjectingStore implements IdempotencyStore {

    enum Fault {
        /** Every call works. */
        NONE,
        /** Every call fails: the store is down before the operation runs. */
        ALL,
        /** Claims work, recording the outcome fails: the store went down while the operation ran. */
        OUTCOME
    }

    private final IdempotencyStore delegate;
    private volatile Fault fault = Fault.NONE;

    FaultInjectingStore(IdempotencyStore delegate) {
        this.delegate = delegate;
    }

    void fault(Fault fault) {
        this.fault = fault;
    }

    private IllegalStateException down(String call) {
        return new IllegalStateException("injected fault: connection refused during " + call);
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        if (fault == Fault.ALL) {
            throw down("tryClaim");
        }
        return delegate.tryClaim(request);
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        if (fault != Fault.NONE) {
            throw down("complete");
        }
        return delegate.complete(key, token, response, retention);
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        if (fault != Fault.NONE) {
            throw down("release");
        }
        return delegate.release(key, token);
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        return delegate.inspect(key);
    }

    @Override
    public int purgeExpired(int limit) {
        return delegate.purgeExpired(limit);
    }

    @Override
    public String name() {
        return "faulty-" + delegate.name();
    }
}
