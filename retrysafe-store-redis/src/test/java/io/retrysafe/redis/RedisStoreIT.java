package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.redis.internal.Script;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What is particular to Redis: scripts called by SHA and reloaded after {@code SCRIPT FLUSH}, key
 * names that carry no client input, the record's TTL, its memory, expiry without a purge, and
 * failures. Runs on the shared local Redis under a prefix of its own; what changes server-wide
 * state ({@code SCRIPT FLUSH}, stopping the server) runs on a private server the test starts.
 */
class RedisStoreIT {
    private static final String PREFIX = RedisTestKeys.uniquePrefix();
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static final Duration PTTL_TOLERANCE = Duration.ofSeconds(2);
    private static final Pattern RECORD_KEY = Pattern.compile(Pattern.quote(PREFIX) + "\\{[0-9a-f]{64}\\}");

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> admin;
    private static RedisIdempotencyStore store;

    private final String scope = "redis-it-" + UUID.randomUUID();

    @BeforeAll
    static void connect() {
        client = RedisClient.create(TestRedis.standaloneUri());
        admin = client.connect();
        store = RedisIdempotencyStore.builder(client).keyPrefix(PREFIX).commandTimeout(TIMEOUT).build();
    }

    @AfterAll
    static void cleanUp() {
        if (client == null) {
            return;
        }
        try {
            RedisTestKeys.deleteAll(admin.sync(), PREFIX);
            admin.close();
        } finally {
            store.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    // ------------------------------------------------------------------------------------------
    // Scripts
    // ------------------------------------------------------------------------------------------

    @Test
    void scriptsAreLoadedOnceAndCalledBySha(@TempDir Path dir) {
        try (TestRedis.Server server = TestRedis.startServer(dir); Private p = new Private(server.uri())) {
            for (int i = 0; i < 20; i++) {
                IdempotencyKey key = key("once-" + i);
                Claimed claimed = claimed(p.store, key);
                assertThat(p.store.complete(key, claimed.token(), response("done " + i), RETENTION))
                        .isEqualTo(FencedWrite.COMMITTED);
                assertThat(p.store.tryClaim(request(key))).isInstanceOf(Replay.class);
            }
            OwnerToken other = claimed(p.store, key("released")).token();
            assertThat(p.store.release(key("released"), other)).isEqualTo(FencedWrite.COMMITTED);

            Map<String, Long> calls = p.commandCalls();
            assertThat(calls.get("script|load")).as("SCRIPT LOAD calls for 41 claims, 20 completes, 1 release")
                    .isEqualTo(Script.STORE.size());
            assertThat(calls.get("evalsha")).as("EVALSHA calls").isEqualTo(62L);
            assertThat(calls).as("commands run: the scripts' source is never sent with EVAL")
                    .doesNotContainKey("eval");
            assertThat(p.admin.sync().scriptExists(shas())).as("SCRIPT EXISTS of every script")
                    .containsOnly(true);
        }
    }

    @Test
    void scriptFlushIsSurvivedByLoadingTheScriptAgain(@TempDir Path dir) {
        try (TestRedis.Server server = TestRedis.startServer(dir); Private p = new Private(server.uri())) {
            IdempotencyKey before = key("before-flush");
            Claimed held = claimed(p.store, before);

            assertThat(p.admin.sync().scriptFlush()).isEqualTo("OK");
            assertThat(p.admin.sync().scriptExists(shas())).as("SCRIPT EXISTS after SCRIPT FLUSH").containsOnly(false);

            IdempotencyKey after = key("after-flush");
            Claimed claimed = claimed(p.store, after);
            assertThat(claimed.attempt()).isEqualTo(1);
            assertThat(p.store.tryClaim(request(before))).as("the record claimed before the flush is still held")
                    .isInstanceOf(ClaimResult.InProgress.class);
            assertThat(p.store.renewLease(after, claimed.token(), LEASE)).isEqualTo(FencedWrite.COMMITTED);
            assertThat(p.store.complete(after, claimed.token(), response("after"), RETENTION))
                    .isEqualTo(FencedWrite.COMMITTED);
            assertThat(p.store.release(before, held.token())).isEqualTo(FencedWrite.COMMITTED);
            assertThat(((Replay) p.store.tryClaim(request(after))).response()).isEqualTo(response("after"));

            assertThat(p.admin.sync().scriptExists(shas())).as("SCRIPT EXISTS once each script was called again")
                    .containsOnly(true);
            Map<String, Long> calls = p.commandCalls();
            assertThat(calls.get("script|load")).as("SCRIPT LOAD calls: each script on connect, again after the flush")
                    .isEqualTo(2L * Script.STORE.size());
            assertThat(calls).as("commands run: the scripts' source is never sent with EVAL").doesNotContainKey("eval");
        }
    }

    // ------------------------------------------------------------------------------------------
    // Keys
    // ------------------------------------------------------------------------------------------

    @Test
    void redisKeysAndFieldsCarryNeitherScopeNorKey() {
        String tenant = "tenant-Ωmega " + scope;
        List<String> values = List.of("payment-" + UUID.randomUUID(), "a b*{tag}?[x]\\", "retrysafe:{evil}",
                "'); FLUSHALL; --");
        List<IdempotencyKey> keys = new ArrayList<>();
        for (String value : values) {
            IdempotencyKey key = IdempotencyKey.of(tenant, value);
            keys.add(key);
            Claimed claimed = claimed(store, key);
            assertThat(store.complete(key, claimed.token(), response(value), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        }

        List<String> redisKeys = keys.stream().map(store::redisKey).toList();
        assertThat(RedisTestKeys.keys(admin.sync(), PREFIX)).as("Redis keys under the prefix")
                .containsAll(redisKeys)
                .allSatisfy(k -> {
                    assertThat(k).matches(RECORD_KEY);
                    assertThat(k).doesNotContain("tenant", "payment-", "tag", "evil", "FLUSHALL");
                });
        for (int i = 0; i < keys.size(); i++) {
            Map<String, String> hash = admin.sync().hgetall(redisKeys.get(i));
            assertThat(hash).as("hash of %s", redisKeys.get(i))
                    .doesNotContainKeys("scope", "key")
                    .containsEntry("status", "COMPLETED");
            String value = values.get(i);
            // The body is this test's own (it echoes the key); every other field is the store's.
            assertThat(hash).as("fields of %s other than the stored body", redisKeys.get(i))
                    .allSatisfy((field, v) -> assertThat(field.equals("rbody") || !(v.contains(tenant) || v.contains(value)))
                            .as("field %s", field).isTrue());
            assertThat(store.inspect(keys.get(i))).get().extracting(IdempotencyRecord::key).isEqualTo(keys.get(i));
        }
    }

    // ------------------------------------------------------------------------------------------
    // Expiry
    // ------------------------------------------------------------------------------------------

    @Test
    void recordTtlIsTheRetentionOfItsLastWrite() {
        IdempotencyKey key = key("ttl");
        Duration claimRetention = Duration.ofMinutes(10);
        Claimed claimed = (Claimed) store.tryClaim(new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(), LEASE,
                claimRetention));
        assertTtl(key, claimRetention, "after the claim");

        assertThat(store.complete(key, claimed.token(), response("done"), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        assertTtl(key, RETENTION, "after complete with retention " + RETENTION);

        IdempotencyKey released = key("ttl-released");
        Claimed other = (Claimed) store.tryClaim(new ClaimRequest(released, Fingerprints.ANY, OwnerToken.random(), LEASE,
                claimRetention));
        assertThat(store.release(released, other.token())).isEqualTo(FencedWrite.COMMITTED);
        assertTtl(released, claimRetention, "after release, which keeps the claim's expiry");
    }

    /** PTTL within tolerance, and the record's own expiresAt is the moment Redis will delete it. */
    private void assertTtl(IdempotencyKey key, Duration retention, String when) {
        Instant before = Instant.now();
        long pttl = admin.sync().pttl(store.redisKey(key));
        assertThat(Duration.ofMillis(pttl)).as("PTTL %s", when)
                .isBetween(retention.minus(PTTL_TOLERANCE), retention);
        IdempotencyRecord record = store.inspect(key).orElseThrow();
        assertThat(Duration.between(before, record.expiresAt())).as("expiresAt - now %s", when)
                .isBetween(retention.minus(PTTL_TOLERANCE), retention.plus(PTTL_TOLERANCE));
    }

    @Test
    void expiredRecordsAreDeletedByRedisAndPurgeHasNothingToDo() {
        Duration shortRetention = Duration.ofMillis(300);
        List<IdempotencyKey> expiring = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            IdempotencyKey key = key("expiring-" + i);
            Claimed claimed = claimed(store, key);
            assertThat(store.complete(key, claimed.token(), response("short"), shortRetention))
                    .isEqualTo(FencedWrite.COMMITTED);
            expiring.add(key);
        }
        IdempotencyKey live = key("live");
        assertThat(store.complete(live, claimed(store, live).token(), response("live"), RETENTION))
                .isEqualTo(FencedWrite.COMMITTED);

        for (IdempotencyKey key : expiring) {
            await("Redis to delete " + store.redisKey(key) + " once its retention of 300 ms ran out")
                    .atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(25))
                    .until(() -> admin.sync().exists(store.redisKey(key)) == 0);
        }

        assertThat(store.purgeExpired(2)).as("purgeExpired: Redis already deleted every expired record").isZero();
        assertThat(((Replay) store.tryClaim(request(live))).response()).isEqualTo(response("live"));
        for (IdempotencyKey key : expiring) {
            assertThat(store.inspect(key)).as("inspect of an expired key").isEmpty();
            assertThat(claimed(store, key).attempt()).as("attempt of a claim of an expired key").isEqualTo(1);
        }
        assertThatThrownBy(() -> store.purgeExpired(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was 0");
    }

    // ------------------------------------------------------------------------------------------
    // Memory
    // ------------------------------------------------------------------------------------------

    /** Reports (does not judge) what one completed record with a 1 KiB response costs in Redis. */
    @Test
    void memoryPerRecordWithOneKibibyteResponse() {
        byte[] body = new byte[1024];
        new Random(7).nextBytes(body);
        StoredResponse response = StoredResponse.of(201, Map.of("Content-Type", List.of("application/json"),
                "Location", List.of("/payments/4711")), body);
        IdempotencyKey key = IdempotencyKey.of("user-42:POST /payments", UUID.randomUUID().toString());
        Claimed claimed = claimed(store, key);
        String redisKey = store.redisKey(key);
        long inProgress = memoryUsage(redisKey);
        String inProgressEncoding = admin.sync().objectEncoding(redisKey);
        assertThat(store.complete(key, claimed.token(), response, RETENTION)).isEqualTo(FencedWrite.COMMITTED);

        long completed = memoryUsage(redisKey);
        String encoding = admin.sync().objectEncoding(redisKey);
        // The same bytes as one string value: the least a serialized record would cost.
        String baselineKey = PREFIX + "{baseline}";
        long payload;
        try (StatefulRedisConnection<byte[], byte[]> bytes = client.connect(ByteArrayCodec.INSTANCE)) {
            payload = bytes.sync().hgetall(redisKey.getBytes(UTF_8)).entrySet().stream()
                    .mapToLong(e -> e.getKey().length + e.getValue().length).sum();
            bytes.sync().set(baselineKey.getBytes(UTF_8), new byte[(int) payload], SetArgs.Builder.px(RETENTION.toMillis()));
        }
        long baseline = memoryUsage(baselineKey);

        System.out.printf("MEMORY USAGE <key> SAMPLES 0 of one record: in progress %d bytes (%s); completed with a"
                + " 1 KiB body and 2 headers %d bytes (%s); the same %d payload bytes as one string: %d bytes%n",
                inProgress, inProgressEncoding, completed, encoding, payload, baseline);
        assertThat(completed).as("MEMORY USAGE of a record holding a 1 KiB body").isGreaterThan(body.length);
    }

    private long memoryUsage(String key) {
        CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8).add("USAGE").addKey(key).add("SAMPLES")
                .add(0);
        return admin.sync().dispatch(CommandType.MEMORY, new IntegerOutput<>(StringCodec.UTF8), args);
    }

    // ------------------------------------------------------------------------------------------
    // Failures
    // ------------------------------------------------------------------------------------------

    @Test
    void unreachableRedisIsStoreUnavailableNamingTheStore() {
        RedisClient nowhere = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(1)
                .withTimeout(Duration.ofSeconds(2)).build());
        try (RedisIdempotencyStore down = RedisIdempotencyStore.builder(nowhere).name("redis-down").build()) {
            assertThatThrownBy(() -> down.tryClaim(request(key("down"))))
                    .isInstanceOfSatisfying(StoreUnavailableException.class, e -> {
                        assertThat(e.storeName()).isEqualTo("redis-down");
                        assertThat(e.httpStatus()).isEqualTo(503);
                        assertThat(e.retryAfter()).isPositive();
                    })
                    .hasMessageContaining("redis-down").hasMessageContaining("connect");
            assertThatThrownBy(() -> down.inspect(key("down"))).isInstanceOf(StoreUnavailableException.class);
        } finally {
            nowhere.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * A failed attempt to connect is not repeated for a second: a call meanwhile fails at once, with that
     * attempt's failure; the first call after the second tries again. On a ticker the test moves, so a
     * slow machine cannot stretch the calls past the second.
     */
    @Test
    void aFailedConnectIsNotRepeatedForASecond() {
        AtomicLong now = new AtomicLong();
        RedisClient nowhere = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(1)
                .withTimeout(Duration.ofSeconds(2)).build());
        // The refusal is immediate; a long commandTimeout only keeps a loaded machine from timing out first.
        try (RedisIdempotencyStore down = RedisIdempotencyStore.builder(nowhere).name("redis-down")
                .commandTimeout(Duration.ofSeconds(30)).ticker(now::get).build()) {
            Throwable first = catchThrowable(() -> down.tryClaim(request(key("first"))));
            now.addAndGet(Duration.ofMillis(999).toNanos());
            Throwable second = catchThrowable(() -> down.inspect(key("second")));
            now.addAndGet(Duration.ofMillis(1).toNanos());
            Throwable third = catchThrowable(() -> down.inspect(key("third")));

            assertThat(first).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("failed to claim").hasMessageContaining("connecting to Redis failed");
            assertThat(second).isInstanceOf(StoreUnavailableException.class).hasMessageContaining("failed to inspect")
                    .hasMessageContaining("the last attempt to connect, less than 1000 ms ago, failed");
            assertThat(second.getCause()).as("the first attempt's failure").isSameAs(first.getCause());
            assertThat(third).as("a second later: a new attempt").isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("failed to inspect").hasMessageContaining("connecting to Redis failed");
            assertThat(third.getCause()).as("the new attempt's own failure").isNotSameAs(first.getCause());
        } finally {
            nowhere.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * Fail-open runs an operation unprotected only while Redis cannot be reached. A record Redis holds
     * but the store cannot use (a key of another type, a field the claim script cannot compare, a
     * stored response that cannot be decoded) is refused even so, with an error that says what is
     * wrong, not that Redis was unreachable: otherwise every retry of that key would run again.
     */
    @Test
    void failOpenNeverRunsPastARecordTheStoreCannotRead() {
        RetrySafe failOpen = RetrySafe.builder(store).failOpen(true).build();
        AtomicInteger runs = new AtomicInteger();
        Operation<String> operation = attempt -> "ran " + runs.incrementAndGet();
        IdempotencyKey notAHash = key("corrupt-type");
        admin.sync().set(store.redisKey(notAHash), "not a record");
        IdempotencyKey badLease = key("corrupt-lease");
        admin.sync().hset(store.redisKey(badLease), Map.of("fingerprint", Fingerprints.ANY.hex(),
                "status", "IN_PROGRESS", "attempt", "1", "lease", "soon"));
        IdempotencyKey badResponse = key("corrupt-response");
        admin.sync().hset(store.redisKey(badResponse), Map.of("fingerprint", Fingerprints.ANY.hex(),
                "status", "COMPLETED", "attempt", "1", "rstatus", "two hundred"));

        for (IdempotencyKey corrupt : List.of(notAHash, badLease, badResponse)) {
            Outcome<String> outcome = failOpen.execute(corrupt, Fingerprints.ANY, ResponseCodec.utf8(), operation);

            assertThat(outcome).as("key %s", corrupt.value()).isInstanceOfSatisfying(Outcome.StoreUnavailable.class,
                    refused -> assertThat(refused.failure()).satisfies(
                            e -> assertThat(e.isUnreachable()).as("Redis answered").isFalse(),
                            e -> assertThat(e.storeName()).isEqualTo(RedisIdempotencyStore.DEFAULT_NAME),
                            e -> assertThat(e.getMessage()).contains(store.redisKey(corrupt))
                                    .containsAnyOf("Redis answered with an error", "cannot read the record")));
        }
        assertThat(runs).as("nothing ran unprotected").hasValue(0);
        assertThat(admin.sync().get(store.redisKey(notAHash))).as("the record is left as it was")
                .isEqualTo("not a record");

        RedisClient nowhere = RedisClient.create(RedisURI.builder().withHost("127.0.0.1").withPort(1)
                .withTimeout(Duration.ofSeconds(2)).build());
        try (RedisIdempotencyStore down = RedisIdempotencyStore.builder(nowhere).name("redis-down").build()) {
            Outcome<String> outcome = RetrySafe.builder(down).failOpen(true).build()
                    .execute(key("down"), Fingerprints.ANY, ResponseCodec.utf8(), operation);

            assertThat(outcome).as("unreachable: fail-open runs it").isInstanceOfSatisfying(Outcome.Unprotected.class,
                    unprotected -> assertThat(unprotected.value()).isEqualTo("ran 1"));
        } finally {
            nowhere.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    @Test
    void redisGoingAwayIsStoreUnavailable(@TempDir Path dir) {
        TestRedis.Server server = TestRedis.startServer(dir);
        RedisClient privateClient = RedisClient.create(server.uri());
        try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(privateClient).name("redis-stopped")
                .commandTimeout(Duration.ofMillis(500)).build()) {
            IdempotencyKey key = key("stopped");
            Claimed claimed = claimed(store, key);

            server.close();

            assertThatThrownBy(() -> store.complete(key, claimed.token(), response("lost"), RETENTION))
                    .isInstanceOfSatisfying(StoreUnavailableException.class,
                            e -> assertThat(e.storeName()).isEqualTo("redis-stopped"))
                    .hasMessageContaining("failed to complete");
            assertThatThrownBy(() -> store.tryClaim(request(key("stopped-2"))))
                    .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("failed to claim");
        } finally {
            server.close();
            privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /**
     * Regression: after a long outage Lettuce waits up to 30 s between reconnection attempts and
     * rejects (or queues until they time out) commands meanwhile, so the store answered 503 for that
     * long after Redis was back. Here Lettuce would not reconnect for ten minutes: the store must open
     * a connection itself, once for all the threads that call it, and find its records as they were.
     *
     * <p>The test's servers keep no data across a restart on their own (no persistence configured);
     * a {@code SAVE} before the kill stands in for an operator's persistence, so that the records
     * written before the outage are there to be checked afterwards. The script cache is never
     * persisted: the restarted server knows none of the scripts.
     */
    @Test
    void afterAnOutageTheStoreReconnectsWithoutWaitingForLettucesReconnectDelay(@TempDir Path dir) throws Exception {
        int threads = 8;
        Duration bound = Duration.ofSeconds(10); // Lettuce's own next attempt is ten minutes away
        ClientResources resources = ClientResources.builder()
                .reconnectDelay(Delay.constant(Duration.ofMinutes(10))).build();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            RedisClient privateClient = RedisClient.create(resources, server.uri());
            RedisClient adminClient = RedisClient.create(server.uri());
            try (RedisIdempotencyStore own = RedisIdempotencyStore.builder(privateClient).name("redis-outage")
                    .commandTimeout(Duration.ofSeconds(2)).build()) {
                IdempotencyKey done = key("outage-completed");
                StoredResponse answer = response("paid before the outage");
                assertThat(own.complete(done, claimed(own, done).token(), answer, RETENTION))
                        .isEqualTo(FencedWrite.COMMITTED);
                IdempotencyKey held = key("outage-in-progress");
                OwnerToken holder = claimed(own, held).token();
                IdempotencyRecord completedBefore = own.inspect(done).orElseThrow();
                IdempotencyRecord heldBefore = own.inspect(held).orElseThrow();
                try (StatefulRedisConnection<String, String> admin = adminClient.connect()) {
                    assertThat(admin.sync().save()).isEqualTo("OK");
                }

                server.kill();
                for (int i = 0; i < 3; i++) {
                    assertThatThrownBy(() -> own.tryClaim(request(key("during-outage"))))
                            .as("a claim while Redis is down").isInstanceOf(StoreUnavailableException.class);
                }
                assertThatThrownBy(() -> own.inspect(done)).isInstanceOf(StoreUnavailableException.class);
                server.restart(); // from the saved file; Lettuce's watchdog waits ten minutes before its next attempt
                StatefulRedisConnection<String, String> admin = adminClient.connect();
                long connectionsBefore = connectionsReceived(admin);

                CountDownLatch go = new CountDownLatch(1);
                List<Future<Claimed>> claims = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    IdempotencyKey fresh = key("after-outage-" + t);
                    claims.add(pool.submit(() -> {
                        go.await();
                        AtomicReference<ClaimResult> result = new AtomicReference<>();
                        await("a claim after Redis is back").atMost(bound).pollDelay(Duration.ZERO)
                                .pollInterval(Duration.ofMillis(20)).until(() -> {
                                    try {
                                        result.set(own.tryClaim(request(fresh)));
                                        return true;
                                    } catch (StoreUnavailableException e) {
                                        return false;
                                    }
                                });
                        return (Claimed) result.get();
                    }));
                }
                go.countDown();
                for (Future<Claimed> claim : claims) {
                    assertThat(claim.get(bound.toSeconds() * 2, TimeUnit.SECONDS).attempt()).isEqualTo(1);
                }

                assertThat(((Replay) own.tryClaim(request(done))).response())
                        .as("the response completed before the outage").isEqualTo(answer);
                assertThat(own.inspect(done)).as("the completed record after the outage").contains(completedBefore);
                assertThat(own.inspect(held)).as("the held record after the outage").contains(heldBefore);
                assertThat(own.inspect(key("during-outage"))).as("the key whose claims were answered 503").isEmpty();
                assertThat(own.tryClaim(request(held))).as("a duplicate of the held key")
                        .isInstanceOf(ClaimResult.InProgress.class);
                assertThat(own.complete(held, OwnerToken.random(), response("stale"), RETENTION))
                        .as("complete with another token").isEqualTo(FencedWrite.LEASE_LOST);
                assertThat(own.complete(held, holder, response("held"), RETENTION))
                        .as("complete by the holder across the outage").isEqualTo(FencedWrite.COMMITTED);
                assertThat(connectionsReceived(admin) - connectionsBefore)
                        .as("connections the restarted server received from the store, called by %d threads", threads)
                        .isEqualTo(1);
                assertThat(admin.sync().scriptExists(shas())).as("SCRIPT EXISTS on the restarted server")
                        .containsOnly(true);
                admin.close();
            } finally {
                adminClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        } finally {
            pool.shutdownNow();
            resources.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Helpers

    /** {@code total_connections_received} from INFO stats: every connection the server accepted since it started. */
    private static long connectionsReceived(StatefulRedisConnection<String, String> admin) {
        for (String line : admin.sync().info("stats").split("\r?\n")) {
            if (line.startsWith("total_connections_received:")) {
                return Long.parseLong(line.substring("total_connections_received:".length()).strip());
            }
        }
        throw new IllegalStateException("INFO stats has no total_connections_received");
    }
    // ------------------------------------------------------------------------------------------

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private static ClaimRequest request(IdempotencyKey key) {
        return new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(), LEASE, RETENTION);
    }

    private static Claimed claimed(RedisIdempotencyStore store, IdempotencyKey key) {
        ClaimResult result = store.tryClaim(request(key));
        assertThat(result).as("claim of %s", key).isInstanceOf(Claimed.class);
        return (Claimed) result;
    }

    private static StoredResponse response(String body) {
        return StoredResponse.of(200, Map.of("Content-Type", List.of("text/plain")), body.getBytes(UTF_8));
    }

    private static String[] shas() {
        return Script.STORE.stream().map(Script::sha).toArray(String[]::new);
    }

    /** A store and an admin connection on a private server. */
    private static final class Private implements AutoCloseable {
        final RedisClient client;
        final RedisIdempotencyStore store;
        final StatefulRedisConnection<String, String> admin;

        Private(RedisURI uri) {
            client = RedisClient.create(uri);
            store = RedisIdempotencyStore.builder(client).name("redis-private").commandTimeout(TIMEOUT).build();
            admin = client.connect();
        }

        /** Calls per command since the server started, from INFO commandstats ({@code script|load}, {@code evalsha}, …). */
        Map<String, Long> commandCalls() {
            RedisCommands<String, String> c = admin.sync();
            Map<String, Long> calls = new TreeMap<>();
            for (String line : c.info("commandstats").split("\r?\n")) {
                if (line.startsWith("cmdstat_")) {
                    String name = line.substring("cmdstat_".length(), line.indexOf(':'));
                    String rest = line.substring(line.indexOf("calls=") + "calls=".length());
                    calls.put(name, Long.parseLong(rest.substring(0, rest.indexOf(','))));
                }
            }
            return calls;
        }

        @Override
        public void close() {
            admin.close();
            store.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }
}
