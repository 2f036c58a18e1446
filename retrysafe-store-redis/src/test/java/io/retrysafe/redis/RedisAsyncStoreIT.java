package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.blockhound.BlockingOperationError;

/**
 * {@link RedisIdempotencyStore#async()} against the local Redis, with BlockHound watching: it shares
 * the blocking store's records (either face reads what the other wrote), connects lazily, and a Redis
 * that is not there fails the stage with StoreUnavailableException instead of hanging or throwing.
 */
class RedisAsyncStoreIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofMinutes(10);
    private static final StoredResponse RESPONSE = StoredResponse.of(201,
            Map.of("Location", List.of("/payments/7")), "{\"id\":7}".getBytes(UTF_8));

    static {
        NonBlocking.install();
    }

    @RegisterExtension
    static final StandaloneRedis redis = new StandaloneRedis(TIMEOUT);
    private static final RedisIdempotencyStore store = redis.store;

    private final String scope = "async-store-it-" + UUID.randomUUID();

    @Test
    void blockHoundCatchesASleepOnLettucesEventLoop() {
        var sleeper = NonBlocking.onEventLoop(redis.client, redis.prefix + "never-pushed", () -> {
            assertThat(Thread.currentThread().getName()).startsWith("lettuce-");
            NonBlocking.sleep(Duration.ofMillis(1));
            return "slept";
        });

        assertThatThrownBy(() -> sleeper.get(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(BlockingOperationError.class);
    }

    @Test
    void whatTheBlockingStoreWroteIsReplayedThroughTheAsynchronousOne() {
        IdempotencyKey key = key("written-blocking");
        Claimed claimed = (Claimed) store.tryClaim(request(key));
        assertThat(store.complete(key, claimed.token(), RESPONSE, RETENTION)).isEqualTo(FencedWrite.COMMITTED);

        ClaimResult again = await(store.async().tryClaim(request(key)));

        assertThat(again).isInstanceOfSatisfying(Replay.class, r -> assertSame(r.response(), RESPONSE));
    }

    @Test
    void whatTheAsynchronousStoreWroteIsReplayedThroughTheBlockingOne() {
        IdempotencyKey key = key("written-async");
        AsyncIdempotencyStore async = store.async();
        FencedWrite written = await(async.tryClaim(request(key))
                .thenCompose(c -> async.complete(key, ((Claimed) c).token(), RESPONSE, RETENTION)));
        assertThat(written).isEqualTo(FencedWrite.COMMITTED);

        assertThat(store.tryClaim(request(key))).isInstanceOfSatisfying(Replay.class,
                r -> assertSame(r.response(), RESPONSE));
        IdempotencyRecord record = store.inspect(key).orElseThrow();
        assertThat(record.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(await(async.inspect(key))).contains(record);
    }

    @Test
    void aClaimHeldThroughOneFaceIsFencedThroughTheOther() {
        IdempotencyKey key = key("fenced");
        Claimed claimed = (Claimed) await(store.async().tryClaim(request(key)));

        assertThat(store.tryClaim(request(key))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(store.complete(key, OwnerToken.random(), RESPONSE, RETENTION)).isEqualTo(FencedWrite.LEASE_LOST);
        assertThat(await(store.async().renewLease(key, claimed.token(), LEASE))).isEqualTo(FencedWrite.COMMITTED);
        assertThat(store.release(key, claimed.token())).isEqualTo(FencedWrite.COMMITTED);
        assertThat(await(store.async().inspect(key)).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
    }

    @Test
    void aBadArgumentFailsTheStageWithoutTouchingRedis() {
        IdempotencyKey key = key("bad-retention");
        CompletionStage<FencedWrite> stage = store.async().complete(key, OwnerToken.random(), RESPONSE,
                Duration.ofNanos(10));

        assertThatThrownBy(() -> stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                .hasCauseInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retention must be at least 1 ms");
    }

    @Test
    void anUnreachableRedisFailsTheStageWithStoreUnavailableNamingTheStore() throws Exception {
        RedisClient nowhere = RedisClient.create(RedisURI.create("127.0.0.1", closedPort()));
        // Built without connecting: nothing listens there, and building does not notice.
        try (RedisIdempotencyStore down = RedisIdempotencyStore.builder(nowhere).name("redis-down")
                .commandTimeout(Duration.ofSeconds(30)).build()) {
            AsyncIdempotencyStore async = down.async();
            CompletionStage<ClaimResult> claim = async.tryClaim(request(key("down")));

            assertThatThrownBy(() -> claim.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .cause().isInstanceOfSatisfying(StoreUnavailableException.class, e -> {
                        assertThat(e.storeName()).isEqualTo("redis-down");
                        assertThat(e.httpStatus()).isEqualTo(503);
                        assertThat(e.retryAfter()).isPositive();
                    })
                    .hasMessageContaining("redis-down").hasMessageContaining("failed to claim");
            assertThatThrownBy(() -> async.inspect(key("down")).toCompletableFuture()
                    .get(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .cause().isInstanceOf(StoreUnavailableException.class).hasMessageContaining("failed to inspect");
        } finally {
            nowhere.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** A loopback port nothing listens on: bound, then released. */
    static int closedPort() throws Exception {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return socket.getLocalPort();
        }
    }

    /**
     * The scripts are read from the jar when the store is built, never by its first call: that call may
     * be made on an event loop (here Lettuce's), where reading a file blocks. The store's classes are
     * loaded afresh for this test, so that no earlier test of the run has read the scripts already.
     */
    @Test
    void theFirstCallOfAStoreMadeOnAnEventLoopReadsNoScript() throws Exception {
        ClassLoader fresh = new FreshRedisClasses(RedisAsyncStoreIT.class.getClassLoader());
        Class<?> storeClass = fresh.loadClass(RedisIdempotencyStore.class.getName());
        assertThat(storeClass).isNotSameAs(RedisIdempotencyStore.class);
        Object builder = storeClass.getMethod("builder", RedisClient.class).invoke(null, redis.client);
        builder.getClass().getMethod("keyPrefix", String.class).invoke(builder, redis.prefix + "fresh:");
        try (AutoCloseable fromFreshClasses = (AutoCloseable) builder.getClass().getMethod("build").invoke(builder)) {
            AsyncIdempotencyStore async = (AsyncIdempotencyStore) storeClass.getMethod("async").invoke(fromFreshClasses);
            IdempotencyKey key = key("first-call-on-the-event-loop");

            var claim = NonBlocking.onEventLoop(redis.client, redis.prefix + "never-pushed", () -> {
                assertThat(Thread.currentThread().getName()).startsWith("lettuce-");
                return async.tryClaim(request(key));
            }).thenCompose(stage -> stage);

            assertThat(await(claim)).isInstanceOf(Claimed.class);
        }
    }

    /** Loads the Redis store's classes ({@code io.retrysafe.redis.*}) itself, everything else from its parent. */
    private static final class FreshRedisClasses extends ClassLoader {
        FreshRedisClasses(ClassLoader parent) {
            super("fresh-redis-classes", parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("io.retrysafe.redis.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> loaded = findLoadedClass(name);
                if (loaded == null) {
                    try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
                        if (in == null) {
                            throw new ClassNotFoundException(name);
                        }
                        byte[] bytes = in.readAllBytes();
                        loaded = defineClass(name, bytes, 0, bytes.length);
                    } catch (IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                return loaded;
            }
        }
    }

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private static ClaimRequest request(IdempotencyKey key) {
        return new ClaimRequest(key, Fingerprints.ANY, OwnerToken.random(), LEASE, RETENTION);
    }

    private static <T> T await(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new AssertionError("stage failed: " + e, e);
        }
    }

    private static void assertSame(StoredResponse actual, StoredResponse expected) {
        assertThat(actual.status()).isEqualTo(expected.status());
        assertThat(actual.headers()).isEqualTo(expected.headers());
        assertThat(actual.body()).isEqualTo(expected.body());
    }
}
