package io.retrysafe.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Redis Cluster one of whose masters stops answering (SIGSTOP: its connections stay open, as in a long pause or a
 * partition): calls for the keys it holds are refused as store-unavailable within the store's command timeout,
 * without blocking and blocking alike, and the keys of the other masters are claimed as before. Lettuce routes a
 * cluster's command to a node's connection, which keeps the client's timeout (60 s by default) whatever the store
 * sets: the store bounds the calls itself.
 */
class RedisClusterOutageIT {
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(1);
    /** Far beyond the command timeout, far below the client's 60 s: a call still waiting then was not bounded. */
    private static final long ANSWERED_WITHIN_SECONDS = 20;
    private static final int KEYS = 30;

    @TempDir
    Path dir;

    @Test
    void callsForASilentMastersKeysAreRefusedWithinTheCommandTimeout() throws Exception {
        try (TestRedis.Cluster cluster = TestRedis.startCluster(dir)) {
            RedisClusterClient client = RedisClusterClient.create(cluster.seedUris());
            int frozen = cluster.masterPorts().get(0);
            try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(client)
                    .keyPrefix(RedisTestKeys.uniquePrefix()).commandTimeout(COMMAND_TIMEOUT).build()) {
                assertThat(store.connect(Duration.ofSeconds(30))).isTrue();
                cluster.freeze(frozen);

                List<CompletableFuture<ClaimResult>> calls = new ArrayList<>();
                for (int i = 0; i < KEYS; i++) {
                    calls.add(store.async().tryClaim(request()).toCompletableFuture());
                }
                int refused = 0;
                for (CompletableFuture<ClaimResult> call : calls) {
                    try {
                        assertThat(call.get(ANSWERED_WITHIN_SECONDS, TimeUnit.SECONDS))
                                .isInstanceOf(ClaimResult.Claimed.class);
                    } catch (ExecutionException e) {
                        assertThat(e.getCause()).isInstanceOf(StoreUnavailableException.class);
                        refused++;
                    }
                }
                assertThat(refused).as("claims of the silent master's keys, about one in three of %d", KEYS).isPositive()
                        .isLessThan(KEYS);

                // The blocking path, for a key of the silent master: new keys are tried until one is refused.
                boolean refusedBlocking = false;
                for (int i = 0; i < KEYS && !refusedBlocking; i++) {
                    try {
                        assertThat(store.tryClaim(request())).isInstanceOf(ClaimResult.Claimed.class);
                    } catch (StoreUnavailableException e) {
                        refusedBlocking = true;
                    }
                }
                assertThat(refusedBlocking).as("a blocking claim of a silent master's key refused").isTrue();
            } finally {
                cluster.thaw(frozen);
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    private static ClaimRequest request() {
        return new ClaimRequest(IdempotencyKey.of("outage", UUID.randomUUID().toString()), Fingerprints.ANY,
                OwnerToken.random(), Duration.ofMinutes(1), Duration.ofHours(1));
    }
}
