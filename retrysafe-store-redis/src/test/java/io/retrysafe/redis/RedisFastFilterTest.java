package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Hex;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import io.retrysafe.spi.FastPath.Cached;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The builder's checks, the entry format, and what the filter does when Redis cannot be reached:
 * a client pointed at a loopback port where nothing listens (the refusal is immediate), and a
 * ticker the test moves. No Redis needed.
 */
class RedisFastFilterTest {
    private static final IdempotencyKey KEY = IdempotencyKey.of("user-42|POST /payments", "key-1");
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("another request".getBytes(UTF_8));

    private static RedisClient client;
    private static RedisClient unreachable;

    @BeforeAll
    static void createClients() throws IOException {
        client = RedisClient.create();
        int closedPort;
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            closedPort = socket.getLocalPort();
        }
        unreachable = RedisClient.create(RedisURI.create("127.0.0.1", closedPort));
        try {
            unreachable.connect().close(); // the first connect of a JVM loads Netty: not inside a test's timeout
        } catch (RedisConnectionException expected) {
            // nothing listens there
        }
    }

    @AfterAll
    static void shutdownClients() {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        unreachable.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    // ------------------------------------------------------------------------------------------
    // Builder
    // ------------------------------------------------------------------------------------------

    @Test
    void defaults() {
        RedisFastFilter filter = RedisFastFilter.builder(client).build();

        assertThat(filter.keyPrefix()).isEqualTo(RedisFastFilter.DEFAULT_KEY_PREFIX).isEqualTo("retrysafe:ff:");
        assertThat(filter.name()).isEqualTo(RedisFastFilter.DEFAULT_NAME).isEqualTo("redis-fast-filter");
        assertThat(filter.timeout()).isEqualTo(RedisFastFilter.DEFAULT_TIMEOUT).isEqualTo(Duration.ofMillis(100));
        assertThat(filter.markerTtl()).isEqualTo(RedisFastFilter.DEFAULT_MARKER_TTL).isEqualTo(Duration.ofSeconds(30));
        assertThat(filter.failureThreshold()).isEqualTo(RedisFastFilter.DEFAULT_FAILURE_THRESHOLD).isEqualTo(5);
        assertThat(filter.openBackoff()).isEqualTo(Duration.ofSeconds(1));
        assertThat(filter.maxOpenBackoff()).isEqualTo(Duration.ofSeconds(30));
        assertThat(filter.breakerState()).isEqualTo(BreakerState.CLOSED);
    }

    @Test
    void redisKeyHasTheStoresLayoutUnderItsOwnPrefix() {
        RedisFastFilter filter = RedisFastFilter.builder(client).build();
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).keyPrefix("retrysafe:ff:").build();

        String hash = Hex.encode(Hex.sha256().digest("user-42|POST /payments\0key-1".getBytes(UTF_8)));
        assertThat(filter.redisKey(KEY)).isEqualTo("retrysafe:ff:{" + hash + "}").isEqualTo(store.redisKey(KEY))
                .doesNotContain("key-1");
    }

    @Test
    void settingsAreCheckedAndMayBeSetOnce() {
        assertThatThrownBy(() -> RedisFastFilter.builder(client).keyPrefix("a{b"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was \"a{b\"");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).timeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("timeout must be positive, but was PT0S");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).markerTtl(Duration.ofNanos(5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("markerTtl must be at least 1 ms (Redis counts milliseconds), but was PT0.000000005S");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).failureThreshold(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was 0");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).openBackoff(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was PT-1S");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).name(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was \" \"");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).timeout(Duration.ofMillis(50))
                .timeout(Duration.ofMillis(60))).isInstanceOf(IllegalStateException.class)
                .hasMessage("timeout was already set to PT0.05S");
        assertThatThrownBy(() -> RedisFastFilter.builder(client).openBackoff(Duration.ofMinutes(2)).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("openBackoff must not exceed maxOpenBackoff, but was PT2M > PT30S");
    }

    // ------------------------------------------------------------------------------------------
    // Entries
    // ------------------------------------------------------------------------------------------

    @Test
    void aResponseRoundTripsByteForByteForItsFingerprintOnly() {
        byte[] body = {0, 1, 2, (byte) 0xff, (byte) 0xc3, 0x28, '\n', 0};
        StoredResponse response = StoredResponse.of(201, Map.of("Location", List.of("/payments/7"),
                "Link", List.of("<a>; rel=\"x\"", "line\nbreak\\")), body);

        byte[] entry = RedisFastFilter.encode(FINGERPRINT, response);

        assertThat(RedisFastFilter.decode(entry, FINGERPRINT)).isEqualTo(new Cached.Replay(response));
        assertThat(((Cached.Replay) RedisFastFilter.decode(entry, FINGERPRINT)).response().body()).isEqualTo(body);
        assertThat(RedisFastFilter.decode(entry, OTHER)).isEqualTo(new Cached.Mismatch());
        assertThat(RedisFastFilter.decode(RedisFastFilter.encode(FINGERPRINT, StoredResponse.of(204, new byte[0])),
                FINGERPRINT)).isEqualTo(new Cached.Replay(StoredResponse.of(204, new byte[0])));
    }

    @Test
    void theMarkerIsInFlightWhateverTheFingerprint() {
        assertThat(RedisFastFilter.decode(RedisFastFilter.MARKER, FINGERPRINT)).isEqualTo(new Cached.InFlight());
        assertThat(RedisFastFilter.decode(RedisFastFilter.MARKER, OTHER)).isEqualTo(new Cached.InFlight());
    }

    @Test
    void anEntryOfAnotherFormatIsRefusedNotMisread() {
        byte[] entry = RedisFastFilter.encode(FINGERPRINT, StoredResponse.of(200, "ok".getBytes(UTF_8)));
        byte[] otherVersion = entry.clone();
        otherVersion[1] = 2;
        byte[] truncated = java.util.Arrays.copyOf(entry, 20);

        assertThatThrownBy(() -> RedisFastFilter.decode(otherVersion, FINGERPRINT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("format 1");
        assertThatThrownBy(() -> RedisFastFilter.decode(truncated, FINGERPRINT))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RedisFastFilter.decode("hello".getBytes(UTF_8), FINGERPRINT))
                .isInstanceOf(IllegalArgumentException.class);
    }

    // ------------------------------------------------------------------------------------------
    // Redis unreachable
    // ------------------------------------------------------------------------------------------

    /** Records the listener's calls. */
    static final class Recorder implements RedisFastFilter.Listener {
        final List<String> changes = new CopyOnWriteArrayList<>();
        final List<String> failures = new CopyOnWriteArrayList<>();

        @Override
        public void onStateChange(BreakerState from, BreakerState to) {
            changes.add(from + "->" + to);
        }

        @Override
        public void onFailure(String operation, RuntimeException error) {
            failures.add(operation);
        }
    }

    @Test
    void withRedisUnreachableEveryCallIsAMissOrANoOpAndTheBreakerOpens() {
        AtomicLong now = new AtomicLong();
        Recorder recorder = new Recorder();
        try (RedisFastFilter filter = RedisFastFilter.builder(unreachable).timeout(Duration.ofSeconds(5))
                .listener(recorder).ticker(now::get).build()) {
            StoredResponse response = StoredResponse.of(201, "created".getBytes(UTF_8));

            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
            assertThat(filter.markInFlight(KEY, FINGERPRINT)).as("the request goes on to the store").isTrue();
            filter.publish(KEY, FINGERPRINT, response, Duration.ofMinutes(1));
            filter.clear(KEY);
            assertThat(filter.breakerState()).isEqualTo(BreakerState.CLOSED);
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();

            assertThat(recorder.failures).containsExactly("lookup", "markInFlight", "publish", "clear", "lookup");
            assertThat(filter.breakerState()).isEqualTo(BreakerState.OPEN);
            assertThat(recorder.changes).containsExactly("CLOSED->OPEN");

            // Open: nothing goes to Redis, so nothing fails (and nothing waits for a timeout).
            for (int i = 0; i < 50; i++) {
                assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
                assertThat(filter.markInFlight(KEY, FINGERPRINT)).isTrue();
                filter.publish(KEY, FINGERPRINT, response, Duration.ofMinutes(1));
                filter.clear(KEY);
            }
            assertThat(recorder.failures).hasSize(5);

            // After the backoff one probe goes to Redis, fails, and the breaker opens for twice as long.
            now.addAndGet(Duration.ofSeconds(1).toNanos());
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
            assertThat(recorder.failures).hasSize(6);
            assertThat(recorder.changes).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN");
            now.addAndGet(Duration.ofMillis(1999).toNanos());
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
            assertThat(recorder.failures).as("still open 1.999 s later").hasSize(6);
            now.addAndGet(Duration.ofMillis(1).toNanos());
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEmpty();
            assertThat(recorder.failures).as("the second probe, 2 s later").hasSize(7);
        }
    }

    @Test
    void aListenerThatThrowsChangesNothing() {
        RedisFastFilter.Listener throwing = new RedisFastFilter.Listener() {
            @Override
            public void onStateChange(BreakerState from, BreakerState to) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void onFailure(String operation, RuntimeException error) {
                throw new IllegalStateException("listener bug");
            }
        };
        try (RedisFastFilter filter = RedisFastFilter.builder(unreachable).timeout(Duration.ofSeconds(5))
                .failureThreshold(1).listener(throwing).build()) {
            assertThat(filter.lookup(KEY, FINGERPRINT)).isEqualTo(Optional.empty());
            assertThat(filter.breakerState()).isEqualTo(BreakerState.OPEN);
        }
    }

    @Test
    void pingBypassesTheBreakerAndThrowsTheFailure() {
        try (RedisFastFilter filter = RedisFastFilter.builder(unreachable).timeout(Duration.ofSeconds(5))
                .failureThreshold(1).build()) {
            filter.lookup(KEY, FINGERPRINT);
            assertThat(filter.breakerState()).isEqualTo(BreakerState.OPEN);

            assertThatThrownBy(filter::ping).isInstanceOf(io.lettuce.core.RedisException.class);
        }
    }
}
