package io.retrysafe.redis;

import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.tck.StandaloneStoreContract;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The store contract on the local standalone Redis ({@code RETRYSAFE_REDIS_URL}), under a key prefix of its own. */
class RedisStandaloneContractIT extends StandaloneStoreContract {
    /** Longer than the default: on a loaded build machine a 1 MiB write among 32 racing threads can take seconds. */
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    @RegisterExtension
    static final StandaloneRedis redis = new StandaloneRedis(TIMEOUT);

    @Override
    protected IdempotencyStore store() {
        return redis.store;
    }

    @Override
    protected boolean expiresRecordsItself() {
        return true;
    }
}
