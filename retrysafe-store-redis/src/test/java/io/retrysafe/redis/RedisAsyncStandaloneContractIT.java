package io.retrysafe.redis;

import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.tck.AsyncStandaloneStoreContract;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The asynchronous store contract (every standalone test through the stages, plus many calls in
 * flight at once) on the local standalone Redis, through {@link RedisIdempotencyStore#async()}, with
 * BlockHound watching Lettuce's event loop, where every stage completes and the contract's chained
 * calls are made.
 */
class RedisAsyncStandaloneContractIT extends AsyncStandaloneStoreContract {
    /** Longer than the default: on a loaded build machine a 1 MiB write among many racing calls can take seconds. */
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    static {
        NonBlocking.install();
    }

    @RegisterExtension
    static final StandaloneRedis redis = new StandaloneRedis(TIMEOUT);

    @Override
    protected AsyncIdempotencyStore asyncStore() {
        return redis.store.async();
    }

    @Override
    protected boolean expiresRecordsItself() {
        return true;
    }
}
