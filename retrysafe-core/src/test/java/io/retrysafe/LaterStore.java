package io.retrysafe;

import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * A non-blocking store as a driver makes one: every call returns at once, and its stage completes
 * later on the store's own thread (an event loop), with the answer of a real store behind it. The
 * engine must chain on that thread, never wait for it.
 */
final class LaterStore implements AsyncIdempotencyStore, AutoCloseable {
    static final String LOOP = "store-loop";

    private final IdempotencyStore delegate;
    private final ExecutorService loop = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, LOOP);
        t.setDaemon(true);
        return t;
    });

    LaterStore(IdempotencyStore delegate) {
        this.delegate = delegate;
    }

    /**
     * Holds the loop until the returned latch is counted down: calls made meanwhile complete only
     * after the caller has chained on their stages, as they would on a driver whose answer is still
     * on the wire. Without it a fast loop may finish before the engine chains, and the next step
     * then runs on the caller's thread.
     */
    CountDownLatch hold() {
        CountDownLatch held = new CountDownLatch(1);
        loop.execute(() -> {
            try {
                held.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return held;
    }

    private <R> CompletionStage<R> later(Supplier<R> call) {
        return CompletableFuture.supplyAsync(call, loop);
    }

    @Override
    public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
        return later(() -> delegate.tryClaim(request));
    }

    @Override
    public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention) {
        return later(() -> delegate.complete(key, token, response, retention));
    }

    @Override
    public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
        return later(() -> delegate.release(key, token));
    }

    @Override
    public boolean canRenewLease() {
        return delegate.canRenewLease();
    }

    @Override
    public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return later(() -> delegate.renewLease(key, token, leaseTtl));
    }

    @Override
    public boolean isStandalone() {
        return delegate.isStandalone();
    }

    @Override
    public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
        return later(() -> delegate.inspect(key));
    }

    @Override
    public CompletionStage<Integer> purgeExpired(int limit) {
        return later(() -> delegate.purgeExpired(limit));
    }

    @Override
    public String name() {
        return delegate.name();
    }

    @Override
    public void close() {
        loop.shutdownNow();
    }
}
