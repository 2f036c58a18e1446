package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.FastPath.Cached;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** {@link FastPath#async()} by default: each blocking call made on the caller's thread, its answer a complete stage. */
record BlockingAsyncFastPath(FastPath fastPath) implements AsyncFastPath {
    @Override
    public CompletionStage<Optional<Cached>> lookup(IdempotencyKey key, Fingerprint fingerprint) {
        return CompletableFuture.completedFuture(fastPath.lookup(key, fingerprint));
    }

    @Override
    public CompletionStage<Boolean> markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
        return CompletableFuture.completedFuture(fastPath.markInFlight(key, fingerprint));
    }

    @Override
    public CompletionStage<Optional<Cached>> lookupOrMark(IdempotencyKey key, Fingerprint fingerprint) {
        return CompletableFuture.completedFuture(fastPath.lookupOrMark(key, fingerprint));
    }

    @Override
    public CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response,
            Duration ttl) {
        fastPath.publish(key, fingerprint, response, ttl);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public CompletionStage<Void> clear(IdempotencyKey key) {
        fastPath.clear(key);
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public String name() {
        return fastPath.name();
    }
}
