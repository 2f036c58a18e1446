package io.retrysafe.gateway;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * A store whose calls block (JDBC, DynamoDB) behind the asynchronous SPI, each call run on a thread of the gateway's
 * pool. A protected request then takes the non-blocking path on any store: it holds a thread only while its claim or
 * completion runs, not while the upstream works, and it skips the servlet layer, which was most of what the gateway
 * spent per request on these stores.
 */
final class StoreOnThreads implements AsyncIdempotencyStore {
    private final IdempotencyStore store;
    private final Executor threads;

    StoreOnThreads(IdempotencyStore store, Executor threads) {
        this.store = store;
        this.threads = threads;
    }

    @Override
    public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
        return call(() -> store.tryClaim(request));
    }

    @Override
    public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention) {
        return call(() -> store.complete(key, token, response, retention));
    }

    @Override
    public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
        return call(() -> store.release(key, token));
    }

    @Override
    public boolean canRenewLease() {
        return store.canRenewLease();
    }

    @Override
    public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return call(() -> store.renewLease(key, token, leaseTtl));
    }

    @Override
    public boolean isStandalone() {
        return store.isStandalone();
    }

    @Override
    public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
        return call(() -> store.inspect(key));
    }

    @Override
    public CompletionStage<Integer> purgeExpired(int limit) {
        return call(() -> store.purgeExpired(limit));
    }

    @Override
    public String name() {
        return store.name();
    }

    /** A failure, the store's or a pool that refuses the call (stopping), is the stage's, as the SPI says. */
    private <R> CompletionStage<R> call(Supplier<R> call) {
        try {
            return CompletableFuture.supplyAsync(call, threads);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }
}
