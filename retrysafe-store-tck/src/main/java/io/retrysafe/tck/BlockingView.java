package io.retrysafe.tck;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An asynchronous store seen through the blocking SPI, so that every test of the contract runs
 * against it unchanged: each call goes to the asynchronous store, and the test's own thread (never
 * the store's) waits for its stage, with a bound.
 */
final class BlockingView implements IdempotencyStore {
    /** Longer than any lock timeout a store under test may wait for. */
    private static final Duration BOUND = Duration.ofSeconds(60);

    private final AsyncIdempotencyStore store;

    BlockingView(AsyncIdempotencyStore store) {
        this.store = store;
    }

    static <T> T await(String call, CompletionStage<T> stage) {
        if (stage == null) {
            throw new AssertionError(call + " returned no stage");
        }
        try {
            return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new AssertionError(call + " failed with " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError(call + " did not complete within " + BOUND, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(call + " interrupted", e);
        }
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        return await("tryClaim", store.tryClaim(request));
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        return await("complete", store.complete(key, token, response, retention));
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        return await("release", store.release(key, token));
    }

    @Override
    public boolean canRenewLease() {
        return store.canRenewLease();
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return await("renewLease", store.renewLease(key, token, leaseTtl));
    }

    @Override
    public boolean isStandalone() {
        return store.isStandalone();
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        return await("inspect", store.inspect(key));
    }

    @Override
    public int purgeExpired(int limit) {
        return await("purgeExpired", store.purgeExpired(limit));
    }

    @Override
    public String name() {
        return store.name();
    }
}
