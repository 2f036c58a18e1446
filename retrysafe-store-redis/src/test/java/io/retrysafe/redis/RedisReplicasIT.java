package io.retrysafe.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code waitForReplicas}: a claim and a completion wait until a replica has them, on a master with one replica
 * under a Sentinel (the store finds the master through it). What a failover does under load is the fault suite's.
 */
class RedisReplicasIT {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final Duration REPLICA_TIMEOUT = Duration.ofMillis(300);
    /** Far longer than the store's cool-down of 1 s between attempts to connect. */
    private static final Duration RECONNECTED = Duration.ofSeconds(15);

    @TempDir
    Path dir;

    private TestRedis.Replicated redis;
    private RedisClient client;
    private RedisIdempotencyStore store;

    @BeforeEach
    void start() {
        redis = TestRedis.startReplicated(dir, 1, 1, "records", Duration.ofSeconds(5));
        client = RedisClient.create(redis.uri());
        store = RedisIdempotencyStore.builder(client).waitForReplicas(1, REPLICA_TIMEOUT).build();
    }

    @AfterEach
    void stop() {
        store.close();
        client.shutdown();
        redis.close();
    }

    @Test
    void aClaimAndACompletionAreOnTheReplicaWhenTheyReturn() {
        IdempotencyKey key = key();
        Claimed claimed = (Claimed) store.tryClaim(request(key));
        assertThat(onReplica(key)).containsEntry("status", "IN_PROGRESS");

        assertThat(store.complete(key, claimed.token(), answer("paid"), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        assertThat(onReplica(key)).containsEntry("status", "COMPLETED").containsEntry("rbody", "paid");
        assertThat(store.unacknowledgedCompletions()).isZero();
        assertThat(store.tryClaim(request(key))).isInstanceOf(Replay.class);
    }

    @Test
    void aClaimNoReplicaAcknowledgesIsRefusedAndReleased() {
        redis.killReplicas();
        IdempotencyKey key = key();

        Throwable refused = catchThrowable(() -> store.tryClaim(request(key)));
        assertThat(refused).isInstanceOf(StoreUnavailableException.class)
                .hasMessageContaining("replica(s) acknowledged the claim").hasMessageContaining("not run");
        // Redis answered: fail-open must not run the operation unprotected either.
        assertThat(((StoreUnavailableException) refused).isUnreachable()).isFalse();
        assertReleased(key);

        Throwable async = catchThrowable(() -> store.async().tryClaim(request(key)).toCompletableFuture().join());
        assertThat(async).isInstanceOf(CompletionException.class).cause()
                .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("acknowledged the claim");
        assertReleased(key);

        redis.restartReplicas();
        assertThat(store.tryClaim(request(key))).as("the replica back").isInstanceOf(Claimed.class);
    }

    @Test
    void aCompletionNoReplicaAcknowledgesStillAnswersAndIsCounted() {
        IdempotencyKey key = key();
        Claimed claimed = (Claimed) store.tryClaim(request(key));
        IdempotencyKey asyncKey = key();
        Claimed asyncClaimed = (Claimed) store.async().tryClaim(request(asyncKey)).toCompletableFuture().join();
        redis.killReplicas();

        assertThat(store.complete(key, claimed.token(), answer("paid"), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        assertThat(store.unacknowledgedCompletions()).isEqualTo(1);
        assertThat(store.async().complete(asyncKey, asyncClaimed.token(), answer("paid too"), RETENTION)
                .toCompletableFuture().join()).isEqualTo(FencedWrite.COMMITTED);
        assertThat(store.unacknowledgedCompletions()).isEqualTo(2);
        assertThat(store.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
    }

    /**
     * A connection that answers stays open, also once its server is a replica: Lettuce does not leave it, and no
     * Sentinel closes it when the server was demoted by hand or the client connected to the old master's address a
     * moment before a failover. Each call there is refused ({@code READONLY}); the store must then ask the Sentinels
     * again, not stay there for good.
     */
    @Test
    void aConnectionLeftOnADemotedMasterIsReplacedByOneToTheMasterTheSentinelsName() {
        AtomicLong now = new AtomicLong();
        try (RedisIdempotencyStore timed = RedisIdempotencyStore.builder(client).waitForReplicas(1, REPLICA_TIMEOUT)
                .ticker(now::get).build()) {
            assertThat(timed.tryClaim(request(key()))).as("connected to the master").isInstanceOf(Claimed.class);
            int promoted = redis.switchOver();

            IdempotencyKey key = key();
            assertThat(catchThrowable(() -> timed.tryClaim(request(key)))).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("READONLY");
            // Replaced, and not connected again within the second: a replica under every address costs one
            // reconnect a second, not one a call.
            assertThat(catchThrowable(() -> timed.tryClaim(request(key)))).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("the last connection, less than 1000 ms ago, reached a replica");
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            await("a claim on the new master").atMost(RECONNECTED).pollInterval(Duration.ofMillis(100))
                    .until(() -> claimed(() -> timed.tryClaim(request(key))));
            assertThat(on(promoted, timed.redisKey(key))).containsEntry("status", "IN_PROGRESS");
        }

        // The non-blocking calls share the connection: demoted again, they find the master too.
        assertThat(store.tryClaim(request(key()))).as("connected to the master").isInstanceOf(Claimed.class);
        int back = redis.switchOver();
        IdempotencyKey asyncKey = key();
        await("a claim on the new master, without blocking").atMost(RECONNECTED)
                .pollInterval(Duration.ofMillis(100))
                .until(() -> claimed(() -> store.async().tryClaim(request(asyncKey)).toCompletableFuture().join()));
        assertThat(on(back, store.redisKey(asyncKey))).containsEntry("status", "IN_PROGRESS");
    }

    /** The fast filter's connection, on a demoted master, likewise: its writes reach the master the Sentinels name. */
    @Test
    void theFastFiltersConnectionLeftOnADemotedMasterIsReplacedToo() {
        RedisFastFilter filter = RedisFastFilter.builder(client).build();
        try {
            IdempotencyKey first = key();
            filter.publish(first, Fingerprints.ANY, answer("paid"), RETENTION);
            assertThat(on(redis.masterPort(), filter.redisKey(first))).as("connected to the master").isNotEmpty();
            int promoted = redis.switchOver();

            IdempotencyKey key = key();
            await("a publication on the new master").atMost(RECONNECTED).pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        filter.publish(key, Fingerprints.ANY, answer("paid"), RETENTION);
                        return !on(promoted, filter.redisKey(key)).isEmpty();
                    });
        } finally {
            filter.close();
        }
    }

    @Test
    void aStoreThatWaitsForReplicasIsRefusedOnAClusterAndWithATimeoutPastTheCommandTimeout() {
        RedisClusterClient cluster = RedisClusterClient.create(RedisURI.create("127.0.0.1", 7000));
        try {
            assertThatThrownBy(() -> RedisIdempotencyStore.builder(cluster).waitForReplicas(1, REPLICA_TIMEOUT).build())
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("Redis Cluster");
        } finally {
            cluster.shutdown();
        }
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).commandTimeout(Duration.ofSeconds(1))
                .waitForReplicas(1, Duration.ofSeconds(1)).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("shorter than the command timeout");
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).waitForReplicas(0, REPLICA_TIMEOUT))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /** A released claim stays as a failed attempt, which the next claim takes over at once. */
    private void assertReleased(IdempotencyKey key) {
        assertThat(store.inspect(key).orElseThrow().status()).as("the claim released").isEqualTo(RecordStatus.FAILED);
    }

    /** Whether {@code claim} claimed the key; a refusal (a 503) is not yet. */
    private static boolean claimed(Supplier<Object> claim) {
        try {
            return claim.get() instanceof Claimed;
        } catch (StoreUnavailableException | CompletionException e) {
            return false;
        }
    }

    /** What the server on {@code port} holds at {@code redisKey}: a hash's fields, or a string's value under "". */
    private static Map<String, String> on(int port, String redisKey) {
        RedisClient direct = RedisClient.create(RedisURI.create("127.0.0.1", port));
        try (StatefulRedisConnection<String, String> c = direct.connect()) {
            String type = c.sync().type(redisKey);
            return switch (type) {
                case "hash" -> c.sync().hgetall(redisKey);
                case "string" -> Map.of("", c.sync().get(redisKey));
                default -> Map.of();
            };
        } finally {
            direct.shutdown();
        }
    }

    /** The record's fields as the replica holds them: read on the replica itself. */
    private Map<String, String> onReplica(IdempotencyKey key) {
        return on(redis.replicaPorts().get(0), store.redisKey(key));
    }

    private static IdempotencyKey key() {
        return IdempotencyKey.of("replicas-it", UUID.randomUUID().toString());
    }

    private static ClaimRequest request(IdempotencyKey key) {
        return new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(), LEASE, RETENTION);
    }

    private static StoredResponse answer(String body) {
        return StoredResponse.of(201, Map.of("Content-Type", List.of("text/plain")), body.getBytes());
    }
}
