package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath.Cached;
import io.retrysafe.testservices.TestRedis;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fast filter on a real Redis: marker, publish, lookup and clear as Redis stores them, TTLs, key
 * names, a Redis Cluster, and a server killed and started again. Runs on the shared local Redis
 * under a prefix of its own; what stops a server or flushes scripts runs on a private one. The
 * non-blocking face ({@link RedisFastFilter#async()}) runs here too, with BlockHound watching Lettuce's
 * event loop: the same entries and breaker, and an unreachable Redis makes it step aside, never fail.
 */
class RedisFastFilterIT {
    private static final String PREFIX = RedisTestKeys.uniquePrefix();
    /** Generous: the shared build machine is loaded, and a timeout here would be a miss, not a wrong answer. */
    private static final Duration TIMEOUT = Duration.ofSeconds(5);
    private static final Duration MARKER_TTL = Duration.ofSeconds(30);
    private static final Duration TTL = Duration.ofMinutes(10);
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("another request".getBytes(UTF_8));
    private static final StoredResponse RESPONSE = StoredResponse.of(201,
            Map.of("Location", List.of("/payments/7"), "Content-Type", List.of("application/json")),
            new byte[] {'{', 0, (byte) 0xff, '}'});

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> admin;
    private static RedisFastFilter filter;

    private final String scope = "fast-filter-it-" + UUID.randomUUID();

    @BeforeAll
    static void connect() {
        NonBlocking.install();
        client = RedisClient.create(TestRedis.standaloneUri());
        admin = client.connect();
        filter = RedisFastFilter.builder(client).keyPrefix(PREFIX).timeout(TIMEOUT).markerTtl(MARKER_TTL).build();
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
            filter.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private IdempotencyKey key(String name) {
        return IdempotencyKey.of(scope, name);
    }

    @Test
    void aMissThenTheMarkerThenTheCommittedResponse() {
        IdempotencyKey key = key("flow");

        assertThat(filter.lookup(key, FINGERPRINT)).isEmpty();
        assertThat(filter.markInFlight(key, FINGERPRINT)).as("first mark").isTrue();
        assertThat(filter.markInFlight(key, FINGERPRINT)).as("a duplicate's mark").isFalse();
        assertThat(filter.lookup(key, FINGERPRINT)).contains(new Cached.InFlight());
        assertThat(filter.lookup(key, OTHER)).as("in flight, whatever the request").contains(new Cached.InFlight());
        assertThat(admin.sync().pttl(filter.redisKey(key))).isBetween(1L, MARKER_TTL.toMillis());

        filter.publish(key, FINGERPRINT, RESPONSE, TTL);

        assertThat(filter.lookup(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
        assertThat(((Cached.Replay) filter.lookup(key, FINGERPRINT).orElseThrow()).response().body())
                .isEqualTo(RESPONSE.body());
        assertThat(filter.lookup(key, OTHER)).contains(new Cached.Mismatch());
        assertThat(admin.sync().pttl(filter.redisKey(key))).as("the response's TTL replaced the marker's")
                .isGreaterThan(MARKER_TTL.toMillis()).isLessThanOrEqualTo(TTL.toMillis());
        assertThat(filter.markInFlight(key, FINGERPRINT)).as("a mark over a cached response").isFalse();
        assertThat(filter.breakerState()).isEqualTo(BreakerState.CLOSED);
    }

    @Test
    void clearRemovesTheMarkerAndNeverACachedResponse() {
        IdempotencyKey released = key("released");
        IdempotencyKey completed = key("completed");
        assertThat(filter.markInFlight(released, FINGERPRINT)).isTrue();
        assertThat(filter.markInFlight(completed, FINGERPRINT)).isTrue();
        filter.publish(completed, FINGERPRINT, RESPONSE, TTL);

        filter.clear(released);
        filter.clear(completed);

        assertThat(admin.sync().exists(filter.redisKey(released))).isZero();
        assertThat(filter.lookup(released, FINGERPRINT)).isEmpty();
        assertThat(filter.markInFlight(released, FINGERPRINT)).as("free again").isTrue();
        assertThat(filter.lookup(completed, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
    }

    @Test
    void aMarkerWhoseHolderDiedExpiresByItsTtl() {
        try (RedisFastFilter shortLived = RedisFastFilter.builder(client).keyPrefix(PREFIX).timeout(TIMEOUT)
                .markerTtl(Duration.ofMillis(300)).build()) {
            IdempotencyKey key = key("holder-died");
            assertThat(shortLived.markInFlight(key, FINGERPRINT)).isTrue();
            assertThat(shortLived.lookup(key, FINGERPRINT)).contains(new Cached.InFlight());

            // Nobody clears it: Redis removes it when the TTL runs out.
            await().atMost(BOUND).pollInterval(Duration.ofMillis(50))
                    .until(() -> shortLived.lookup(key, FINGERPRINT).isEmpty());
            assertThat(shortLived.markInFlight(key, FINGERPRINT)).isTrue();
        }
    }

    @Test
    void aTtlUnderOneMillisecondPublishesNothing() {
        IdempotencyKey key = key("no-ttl-left");
        assertThat(filter.markInFlight(key, FINGERPRINT)).isTrue();

        filter.publish(key, FINGERPRINT, RESPONSE, Duration.ofNanos(999_999));

        assertThat(filter.lookup(key, FINGERPRINT)).as("nothing cached, and the marker is gone").isEmpty();
    }

    @Test
    void keyNamesCarryOnlyTheHashOfScopeAndKey() {
        String raw = "order-4711 {secret} *";
        IdempotencyKey key = IdempotencyKey.of(scope, raw.replace(' ', '-'));
        filter.markInFlight(key, FINGERPRINT);
        filter.publish(key, FINGERPRINT, RESPONSE, TTL);

        Pattern layout = Pattern.compile(Pattern.quote(PREFIX) + "\\{[0-9a-f]{64}\\}");
        assertThat(RedisTestKeys.keys(admin.sync(), PREFIX)).isNotEmpty()
                .allSatisfy(k -> assertThat(k).matches(layout).doesNotContain("order").doesNotContain(scope));
        assertThat(filter.redisKey(key)).isEqualTo(
                RedisIdempotencyStore.builder(client).keyPrefix(PREFIX).build().redisKey(key));
    }

    @Test
    void clearWorksAfterTheServerForgotItsScript(@TempDir Path dir) {
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            RedisClient privateClient = RedisClient.create(server.uri());
            try (RedisFastFilter own = RedisFastFilter.builder(privateClient).timeout(TIMEOUT).build();
                    StatefulRedisConnection<String, String> privateAdmin = privateClient.connect()) {
                IdempotencyKey first = key("before-flush");
                IdempotencyKey second = key("after-flush");
                own.markInFlight(first, FINGERPRINT);
                own.clear(first);
                assertThat(privateAdmin.sync().exists(own.redisKey(first))).isZero();

                assertThat(privateAdmin.sync().scriptFlush()).isEqualTo("OK");
                own.markInFlight(second, FINGERPRINT);
                own.clear(second);

                assertThat(privateAdmin.sync().exists(own.redisKey(second))).isZero();
                assertThat(own.breakerState()).isEqualTo(BreakerState.CLOSED);
            } finally {
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @Test
    void aKilledRedisOpensTheBreakerAndItClosesWhenRedisIsBack(@TempDir Path dir) {
        AtomicLong now = new AtomicLong();
        RedisFastFilterTest.Recorder recorder = new RedisFastFilterTest.Recorder();
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            RedisClient privateClient = RedisClient.create(server.uri());
            try (RedisFastFilter own = RedisFastFilter.builder(privateClient).timeout(Duration.ofSeconds(1))
                    .listener(recorder).ticker(now::get).build()) {
                IdempotencyKey key = key("outage");
                own.publish(key, FINGERPRINT, RESPONSE, TTL);
                assertThat(own.lookup(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));

                server.kill();

                for (int i = 0; i < own.failureThreshold(); i++) {
                    assertThat(own.lookup(key, FINGERPRINT)).as("a miss while Redis is gone").isEmpty();
                }
                assertThat(own.breakerState()).isEqualTo(BreakerState.OPEN);
                int failures = recorder.failures.size();
                assertThat(failures).isEqualTo(own.failureThreshold());
                for (int i = 0; i < 20; i++) {
                    assertThat(own.lookup(key, FINGERPRINT)).isEmpty();
                    assertThat(own.markInFlight(key, FINGERPRINT)).isTrue();
                }
                assertThat(recorder.failures).as("no call went to Redis while open").hasSize(failures);

                server.restart(); // empty: no persistence

                await().atMost(BOUND).pollInterval(Duration.ofMillis(100)).until(() -> {
                    now.addAndGet(own.maxOpenBackoff().toNanos());
                    own.lookup(key, FINGERPRINT);
                    return own.breakerState() == BreakerState.CLOSED;
                });
                assertThat(recorder.changes).startsWith("CLOSED->OPEN", "OPEN->HALF_OPEN").endsWith("HALF_OPEN->CLOSED");
                assertThat(own.lookup(key, FINGERPRINT)).as("the restarted server is empty").isEmpty();
                own.publish(key, FINGERPRINT, RESPONSE, TTL);
                assertThat(own.lookup(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
            } finally {
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /**
     * A filter whose first connection failed tries again with the breaker's first probe, however soon
     * (unlike the store, it keeps no cool-down of its own after a failed connect).
     */
    @Test
    void aFilterStartedWhileRedisIsDownConnectsWithTheFirstProbeOnceRedisIsUp(@TempDir Path dir) {
        AtomicLong now = new AtomicLong();
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            server.kill();
            RedisClient privateClient = RedisClient.create(server.uri());
            try (RedisFastFilter own = RedisFastFilter.builder(privateClient).timeout(TIMEOUT).failureThreshold(1)
                    .ticker(now::get).build()) {
                IdempotencyKey key = key("started-down");
                assertThat(own.markInFlight(key, FINGERPRINT)).as("the request goes on to the store").isTrue();
                assertThat(own.breakerState()).isEqualTo(BreakerState.OPEN);

                server.restart();
                now.addAndGet(own.openBackoff().toNanos());
                assertThat(own.markInFlight(key, FINGERPRINT)).as("the probe sets the marker").isTrue();

                assertThat(own.breakerState()).as("the probe reached Redis").isEqualTo(BreakerState.CLOSED);
                assertThat(own.lookup(key, FINGERPRINT)).contains(new Cached.InFlight());
            } finally {
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /**
     * Regression: a probe used to go to Lettuce's connection as it was; while that connection waited
     * out Lettuce's own reconnect delay (growing to 30 s during a long outage) it rejected the probe
     * without trying Redis, the breaker's backoff doubled, and the filter stayed off for up to a minute
     * after Redis was back. Here Lettuce would not reconnect for ten minutes: the probe itself must.
     */
    @Test
    void aProbeAfterAnOutageReconnectsWithoutWaitingForLettucesReconnectDelay(@TempDir Path dir) {
        AtomicLong now = new AtomicLong();
        ClientResources resources = ClientResources.builder()
                .reconnectDelay(Delay.constant(Duration.ofMinutes(10))).build();
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            RedisClient privateClient = RedisClient.create(resources, server.uri());
            privateClient.setOptions(ClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
            try (RedisFastFilter own = RedisFastFilter.builder(privateClient).timeout(Duration.ofSeconds(5))
                    .ticker(now::get).build()) {
                IdempotencyKey key = key("reconnect");
                own.publish(key, FINGERPRINT, RESPONSE, TTL);
                assertThat(own.lookup(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));

                server.kill();
                await().atMost(BOUND).pollInterval(Duration.ofMillis(20)).until(() -> {
                    own.lookup(key, FINGERPRINT);
                    return own.breakerState() == BreakerState.OPEN;
                });
                server.restart(); // Lettuce's watchdog now waits ten minutes before its next attempt

                now.addAndGet(own.openBackoff().toNanos());
                own.publish(key, FINGERPRINT, RESPONSE, TTL); // the probe

                assertThat(own.breakerState()).as("the probe reached the restarted Redis").isEqualTo(BreakerState.CLOSED);
                assertThat(own.lookup(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
            } finally {
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        } finally {
            resources.shutdown(0, 2, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    @Test
    void onARedisClusterEveryKeyWorksInItsSlot(@TempDir Path dir) {
        try (TestRedis.Cluster cluster = TestRedis.startCluster(dir)) {
            RedisClusterClient clusterClient = RedisClusterClient.create(cluster.seedUris());
            try (RedisFastFilter own = RedisFastFilter.builder(clusterClient).timeout(TIMEOUT).build()) {
                for (int i = 0; i < 30; i++) {
                    IdempotencyKey completed = key("cluster-completed-" + i);
                    IdempotencyKey released = key("cluster-released-" + i);
                    assertThat(own.markInFlight(completed, FINGERPRINT)).isTrue();
                    assertThat(own.markInFlight(released, FINGERPRINT)).isTrue();
                    assertThat(own.lookup(completed, FINGERPRINT)).contains(new Cached.InFlight());
                    own.publish(completed, FINGERPRINT, RESPONSE, TTL);
                    own.clear(released);
                    own.clear(completed);

                    assertThat(own.lookup(completed, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
                    assertThat(own.lookup(completed, OTHER)).contains(new Cached.Mismatch());
                    assertThat(own.lookup(released, FINGERPRINT)).isEqualTo(Optional.empty());
                }
                assertThat(own.breakerState()).isEqualTo(BreakerState.CLOSED);
            } finally {
                clusterClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /**
     * A master that stops answering (SIGSTOP: its connections stay open, as in a long pause or a partition): the
     * calls for its keys step aside within the filter's timeout, through both faces, not after the client's own
     * (60 s), and the other masters' keys work as before. The breaker is kept closed so that every call is tried.
     */
    @Test
    void onARedisClusterASilentMastersKeysStepAsideWithinTheTimeout(@TempDir Path dir) throws Exception {
        try (TestRedis.Cluster cluster = TestRedis.startCluster(dir)) {
            RedisClusterClient clusterClient = RedisClusterClient.create(cluster.seedUris());
            Queue<String> failed = new ConcurrentLinkedQueue<>();
            ExecutorService caller = Executors.newSingleThreadExecutor();
            int frozen = cluster.masterPorts().get(0);
            try (RedisFastFilter own = RedisFastFilter.builder(clusterClient).timeout(Duration.ofSeconds(1))
                    .failureThreshold(1_000).listener(new RedisFastFilter.Listener() {
                        @Override
                        public void onFailure(String operation, RuntimeException error) {
                            failed.add(operation);
                        }
                    }).build()) {
                IdempotencyKey silent = keyOnMaster(own, clusterClient, frozen, true);
                IdempotencyKey live = keyOnMaster(own, clusterClient, frozen, false);
                assertThat(own.lookup(live, FINGERPRINT)).as("connected").isEmpty();
                cluster.freeze(frozen);

                assertThat(caller.submit(() -> own.lookup(silent, FINGERPRINT)).get(20, TimeUnit.SECONDS)).isEmpty();
                assertThat(caller.submit(() -> own.markInFlight(silent, FINGERPRINT)).get(20, TimeUnit.SECONDS))
                        .as("without Redis, the request goes on to the store").isTrue();
                assertThat(own.async().lookup(silent, FINGERPRINT).toCompletableFuture().get(20, TimeUnit.SECONDS))
                        .isEmpty();
                assertThat(failed).as("each call to the silent master failed, and was counted")
                        .containsExactly("lookup", "markInFlight", "lookup");

                assertThat(own.markInFlight(live, FINGERPRINT)).isTrue();
                assertThat(own.lookup(live, FINGERPRINT)).as("another master's key").contains(new Cached.InFlight());
                assertThat(own.breakerState()).isEqualTo(BreakerState.CLOSED);
            } finally {
                cluster.thaw(frozen);
                caller.shutdownNow();
                clusterClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    /** A key of this test whose slot the master on {@code port} holds, or, with {@code on} false, does not. */
    private IdempotencyKey keyOnMaster(RedisFastFilter own, RedisClusterClient client, int port, boolean on) {
        for (int i = 0; ; i++) {
            IdempotencyKey key = key("slot-" + i);
            int slot = SlotHash.getSlot(own.redisKey(key));
            if ((client.getPartitions().getPartitionBySlot(slot).getUri().getPort() == port) == on) {
                return key;
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // The non-blocking face, async(): the same entries and breaker; BlockHound watches the event loop
    // ------------------------------------------------------------------------------------------

    @Test
    void aMissThenTheMarkerThenTheCommittedResponseThroughTheAsynchronousFace() {
        AsyncFastPath async = filter.async();
        IdempotencyKey key = key("flow");

        assertThat(done(async.lookup(key, FINGERPRINT))).isEmpty();
        assertThat(done(async.markInFlight(key, FINGERPRINT))).as("first mark").isTrue();
        assertThat(done(async.markInFlight(key, FINGERPRINT))).as("a duplicate's mark").isFalse();
        assertThat(done(async.lookup(key, OTHER))).contains(new Cached.InFlight());
        assertThat(filter.lookup(key, FINGERPRINT)).as("the blocking face").contains(new Cached.InFlight());

        done(async.publish(key, FINGERPRINT, RESPONSE, TTL));

        assertThat(done(async.lookup(key, FINGERPRINT))).contains(new Cached.Replay(RESPONSE));
        assertThat(filter.lookup(key, FINGERPRINT)).as("the blocking face").contains(new Cached.Replay(RESPONSE));
        assertThat(done(async.lookup(key, OTHER))).contains(new Cached.Mismatch());
        assertThat(admin.sync().pttl(filter.redisKey(key))).isGreaterThan(MARKER_TTL.toMillis());
        done(async.clear(key));
        assertThat(done(async.lookup(key, FINGERPRINT))).as("clear never removes a cached response")
                .contains(new Cached.Replay(RESPONSE));
        assertThat(filter.breakerState()).isEqualTo(BreakerState.CLOSED);
    }

    @Test
    void whatTheBlockingFacePublishedIsReplayedAndItsMarkerClearedThroughTheAsynchronousOne() {
        IdempotencyKey completed = key("completed");
        IdempotencyKey released = key("released");
        filter.publish(completed, FINGERPRINT, RESPONSE, TTL);
        assertThat(filter.markInFlight(released, FINGERPRINT)).isTrue();

        assertThat(done(filter.async().lookup(completed, FINGERPRINT))).contains(new Cached.Replay(RESPONSE));
        done(filter.async().clear(released));

        assertThat(admin.sync().exists(filter.redisKey(released))).isZero();
        assertThat(filter.markInFlight(released, FINGERPRINT)).as("free again").isTrue();
    }

    @Test
    void marksOfOneKeyAllInFlightAtOnceHaveOneWinner() {
        IdempotencyKey key = key("race");
        List<CompletableFuture<Boolean>> marks = IntStream.range(0, 64)
                .mapToObj(i -> filter.async().markInFlight(key, FINGERPRINT).toCompletableFuture()).toList();

        List<Boolean> won = done(CompletableFuture.allOf(marks.toArray(CompletableFuture[]::new))
                .thenApply(done -> marks.stream().map(CompletableFuture::join).toList()));

        assertThat(won).filteredOn(Boolean::booleanValue).as("marks that won").hasSize(1);
    }

    @Test
    void lookupOrMarkSetsTheMarkerOnAMissAndOtherwiseSaysWhatTheKeyHolds() {
        IdempotencyKey key = key("look-and-mark");

        assertThat(filter.lookupOrMark(key, FINGERPRINT)).as("a miss: the marker is set, the caller goes on").isEmpty();
        assertThat(admin.sync().pttl(filter.redisKey(key))).as("the marker's TTL").isBetween(1L, MARKER_TTL.toMillis());
        assertThat(filter.lookupOrMark(key, FINGERPRINT)).as("a duplicate").contains(new Cached.InFlight());
        assertThat(done(filter.async().lookupOrMark(key, OTHER))).contains(new Cached.InFlight());

        filter.publish(key, FINGERPRINT, RESPONSE, TTL);

        assertThat(filter.lookupOrMark(key, FINGERPRINT)).contains(new Cached.Replay(RESPONSE));
        assertThat(done(filter.async().lookupOrMark(key, FINGERPRINT))).contains(new Cached.Replay(RESPONSE));
        assertThat(filter.lookupOrMark(key, OTHER)).contains(new Cached.Mismatch());
        assertThat(admin.sync().pttl(filter.redisKey(key))).as("the response's TTL, not a marker's")
                .isGreaterThan(MARKER_TTL.toMillis());
    }

    @Test
    void lookupOrMarkLeavesAnEntryItCannotReadToTheStoreAndSetsNoMarker() {
        IdempotencyKey key = key("unreadable");
        byte[] foreign = {'R', 99, 1, 2, 3};
        try (StatefulRedisConnection<byte[], byte[]> raw = client.connect(ByteArrayCodec.INSTANCE)) {
            raw.sync().set(filter.redisKey(key).getBytes(UTF_8), foreign);

            assertThat(filter.lookupOrMark(key, FINGERPRINT)).as("the store decides").isEmpty();
            assertThat(raw.sync().get(filter.redisKey(key).getBytes(UTF_8))).as("left as it was").isEqualTo(foreign);
        }
    }

    @Test
    void lookupsAndMarksOfOneKeyAllInFlightAtOnceHaveOneWinnerAndEveryOtherSeesItsMarker() {
        IdempotencyKey key = key("look-and-mark-race");
        List<CompletableFuture<Optional<Cached>>> calls = IntStream.range(0, 64)
                .mapToObj(i -> filter.async().lookupOrMark(key, FINGERPRINT).toCompletableFuture()).toList();

        List<Optional<Cached>> answers = done(CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new))
                .thenApply(all -> calls.stream().map(CompletableFuture::join).toList()));

        assertThat(answers).filteredOn(Optional::isEmpty).as("callers that set the marker").hasSize(1);
        assertThat(answers).filteredOn(Optional::isPresent).hasSize(63)
                .allSatisfy(a -> assertThat(a).contains(new Cached.InFlight()));
    }

    /** The point of the script: a first request's look-up and marker cost Redis one command, not two or three. */
    @Test
    void lookupOrMarkIsOneCommandAndSurvivesAFlushOfTheScripts(@TempDir Path dir) {
        try (TestRedis.Server server = TestRedis.startServer(dir)) {
            RedisClient privateClient = RedisClient.create(server.uri());
            try (RedisFastFilter own = RedisFastFilter.builder(privateClient).timeout(TIMEOUT).build();
                    StatefulRedisConnection<String, String> privateAdmin = privateClient.connect()) {
                own.ping(); // connected, its scripts loaded
                privateAdmin.sync().configResetstat();

                assertThat(own.lookupOrMark(key("one-command"), FINGERPRINT)).isEmpty();

                String stats = privateAdmin.sync().info("commandstats");
                // One EVALSHA sent; Redis counts the script's own GET and SET as well, once each.
                assertThat(stats).contains("cmdstat_evalsha:calls=1,", "cmdstat_get:calls=1,", "cmdstat_set:calls=1,")
                        .doesNotContain("cmdstat_script");

                assertThat(privateAdmin.sync().scriptFlush()).isEqualTo("OK");
                IdempotencyKey afterFlush = key("after-flush");
                assertThat(own.lookupOrMark(afterFlush, FINGERPRINT)).as("loaded again, and marked").isEmpty();
                assertThat(own.lookupOrMark(afterFlush, FINGERPRINT)).contains(new Cached.InFlight());
                assertThat(own.breakerState()).isEqualTo(BreakerState.CLOSED);
            } finally {
                privateClient.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @Test
    void anUnreachableRedisMakesEveryCallStepAsideAndOpensTheBreakerBothFacesShare() throws Exception {
        RedisClient nowhere = RedisClient.create(RedisURI.create("127.0.0.1", RedisAsyncStoreIT.closedPort()));
        Queue<String> failed = new ConcurrentLinkedQueue<>();
        Queue<BreakerState> states = new ConcurrentLinkedQueue<>();
        // Built without connecting: nothing listens there, and building does not notice.
        try (RedisFastFilter down = RedisFastFilter.builder(nowhere).name("ff-down").timeout(Duration.ofSeconds(5))
                .failureThreshold(4).openBackoff(Duration.ofMinutes(5)).maxOpenBackoff(Duration.ofMinutes(5))
                .listener(new RedisFastFilter.Listener() {
                    @Override
                    public void onFailure(String operation, RuntimeException error) {
                        failed.add(operation);
                    }

                    @Override
                    public void onStateChange(BreakerState from, BreakerState to) {
                        states.add(to);
                    }
                }).build()) {
            AsyncFastPath async = down.async();
            IdempotencyKey key = key("down");

            assertThat(done(async.lookup(key, FINGERPRINT))).as("a lookup: a miss").isEmpty();
            assertThat(done(async.markInFlight(key, FINGERPRINT))).as("a mark: the request goes on").isTrue();
            assertThat(done(async.publish(key, FINGERPRINT, RESPONSE, TTL))).as("a publish does nothing").isNull();
            assertThat(done(async.clear(key))).as("a clear does nothing").isNull();

            assertThat(failed).containsExactly("lookup", "markInFlight", "publish", "clear");
            assertThat(states).as("open after four failures").containsExactly(BreakerState.OPEN);
            assertThat(done(async.lookupOrMark(key, FINGERPRINT))).as("open: the request goes on unmarked").isEmpty();
            assertThat(states).containsExactly(BreakerState.OPEN);
            assertThat(down.breakerState()).as("the blocking face's breaker").isEqualTo(BreakerState.OPEN);
            // Open: neither face goes to Redis, and neither counts a failure.
            assertThat(down.lookup(key, FINGERPRINT)).isEmpty();
            assertThat(done(async.lookup(key, FINGERPRINT))).isEmpty();
            assertThat(down.lookupOrMark(key, FINGERPRINT)).isEmpty();
            assertThat(failed).hasSize(4);
        } finally {
            nowhere.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private static <T> T done(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("the stage failed, which a fast filter's never does: " + e, e);
        }
    }
}
