package io.retrysafe;

import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Fault injection around a real store: each call goes to the delegate unless a failure was set for
 * it, in which case it throws that failure (before reaching the delegate). Counts claims so that a
 * test can tell when a concurrent caller has reached the store.
 */
final class FaultyStore implements IdempotencyStore {
    private final IdempotencyStore delegate;
    private final AtomicReference<RuntimeException> claimFailure = new AtomicReference<>();
    private final AtomicReference<RuntimeException> completeFailure = new AtomicReference<>();
    private final AtomicReference<RuntimeException> releaseFailure = new AtomicReference<>();
    private final AtomicInteger claims = new AtomicInteger();
    /** How many more completions fail, when {@link #failCompletions(RuntimeException, int)} set a number. */
    private final AtomicInteger completionsToFail = new AtomicInteger(-1);
    private volatile boolean standalone = true;

    FaultyStore(IdempotencyStore delegate) {
        this.delegate = delegate;
    }

    void failClaims(RuntimeException failure) {
        claimFailure.set(failure);
    }

    void failCompletions(RuntimeException failure) {
        completeFailure.set(failure);
    }

    /** The next {@code times} completions fail, the ones after them reach the store. */
    void failCompletions(RuntimeException failure, int times) {
        completionsToFail.set(times);
        completeFailure.set(failure);
    }

    /** Answers as a store bound to the operation's transaction does. */
    void bindToTransaction() {
        standalone = false;
    }

    @Override
    public boolean isStandalone() {
        return standalone;
    }

    void failReleases(RuntimeException failure) {
        releaseFailure.set(failure);
    }

    void heal() {
        claimFailure.set(null);
        completeFailure.set(null);
        releaseFailure.set(null);
    }

    /** How many times tryClaim was called, failed calls included. */
    int claims() {
        return claims.get();
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        claims.incrementAndGet();
        throwIfSet(claimFailure);
        return delegate.tryClaim(request);
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        if (completionsToFail.get() >= 0 && completionsToFail.getAndDecrement() <= 0) {
            completeFailure.set(null);
        }
        throwIfSet(completeFailure);
        return delegate.complete(key, token, response, retention);
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        throwIfSet(releaseFailure);
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
        return "faulty";
    }

    private static void throwIfSet(AtomicReference<RuntimeException> failure) {
        RuntimeException e = failure.get();
        if (e != null) {
            throw e;
        }
    }
}
