package io.retrysafe.benchmarks;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * Claim throughput of {@link RedisIdempotencyStore} against its floor, a plain
 * {@code SET key value NX EX} (the least any claim in Redis can cost: one atomic write of one key):
 *
 * <ul>
 *   <li>{@code claim}: {@code setNxEx} one {@code SET NX EX}; {@code retrysafe} one
 *       {@link RedisIdempotencyStore#tryClaim} (the claim script by {@code EVALSHA});
 *   <li>{@code claimAndComplete}: {@code setNxEx} that, then a {@code SET XX EX} of 216 bytes (the
 *       response's body and about what its status and headers take); {@code retrysafe} a claim, then
 *       {@link RedisIdempotencyStore#complete} of the response (201, two headers, a 152-byte JSON body),
 *       the completion script.
 * </ul>
 *
 * Each invocation uses a key of its own. Each JMH thread has its own Lettuce connection (its own store
 * for {@code retrysafe}, which opens one): {@code -t 50} is 50 connections. Keys live under
 * {@code retrysafe-bench:<uuid>:}, expire after 60 s, and are deleted after every iteration and at the
 * end, so a run leaves nothing behind on a shared Redis.
 *
 * <p>{@link #main} runs the JMH options it is given at 1 and at 50 threads in one invocation and prints
 * one table; the variants are {@code @Param}s, so each thread count measures both in one run:
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.RedisClaimBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RedisClaimBenchmark -t 50     # one thread count, plain JMH
 * </pre>
 * Redis: {@code RETRYSAFE_REDIS_URL}, default {@code redis://127.0.0.1:6379} (see {@link TestRedis}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
@State(Scope.Benchmark)
public class RedisClaimBenchmark {
    /** The thread (connection) counts {@link #main} measures. */
    static final int[] THREAD_COUNTS = {1, 50};
    static final Duration RETENTION = Duration.ofSeconds(60);
    static final Duration LEASE = Duration.ofSeconds(30);
    static final Fingerprint FINGERPRINT = Fingerprint.sha256("{\"account\":\"acc-1\",\"amount\":100}".getBytes(UTF_8));
    /** A typical small JSON answer: 152 bytes of body, two headers. */
    static final StoredResponse RESPONSE = StoredResponse.of(201,
            Map.of("Content-Type", List.of("application/json"), "Location",
                    List.of("/payments/0192a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")),
            ("{\"id\":\"0192a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b\",\"account\":\"acc-1\",\"amount\":100,"
                    + "\"balance\":99900,\"createdAt\":\"2026-11-30T12:00:00.123456Z\",\"status\":\"BOOKED\"}").getBytes(UTF_8));

    @Param({"setNxEx", "retrysafe"})
    public String variant;

    RedisClient client;
    String prefix;
    private StatefulRedisConnection<String, String> admin;
    private final AtomicInteger threadIds = new AtomicInteger();

    @Setup(Level.Trial)
    public void setUp() {
        RedisURI uri = TestRedis.standaloneUri();
        client = RedisClient.create(uri);
        admin = client.connect();
        prefix = "retrysafe-bench:" + UUID.randomUUID().toString().substring(0, 8) + ":";
    }

    /** Outside the measured time: the iteration's keys go, so that Redis does not grow through a run. */
    @TearDown(Level.Iteration)
    public void deleteKeys() {
        unlinkAll(admin.sync(), prefix);
    }

    /** Unlinks every key that starts with {@code prefix}, 1,000 at a time. */
    static void unlinkAll(RedisCommands<String, String> redis, String prefix) {
        List<String> batch = new ArrayList<>(1000);
        ScanIterator.scan(redis, ScanArgs.Builder.matches(prefix + "*").limit(1000)).forEachRemaining(key -> {
            batch.add(key);
            if (batch.size() == 1000) {
                redis.unlink(batch.toArray(String[]::new));
                batch.clear();
            }
        });
        if (!batch.isEmpty()) {
            redis.unlink(batch.toArray(String[]::new));
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (client != null) {
            deleteKeys();
            admin.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** One JMH thread: its own connection, its own key sequence. */
    @State(Scope.Thread)
    public static class Connection {
        private StatefulRedisConnection<byte[], byte[]> connection;
        private RedisCommands<byte[], byte[]> commands;
        private RedisIdempotencyStore store;
        private String keyBase;
        private long sequence;
        private boolean plain;
        private byte[] responseBytes;
        private byte[] prefixBytes;

        @Setup(Level.Trial)
        public void open(RedisClaimBenchmark shared) {
            plain = switch (shared.variant) {
                case "setNxEx" -> true;
                case "retrysafe" -> false;
                default -> throw new IllegalArgumentException("variant must be setNxEx or retrysafe, but was "
                        + shared.variant);
            };
            keyBase = "t" + shared.threadIds.incrementAndGet() + "-";
            if (plain) {
                connection = shared.client.connect(ByteArrayCodec.INSTANCE);
                commands = connection.sync();
                // What the store's record holds in its response fields, as one value.
                responseBytes = new byte[RESPONSE.bodyLength() + 64];
            } else {
                store = RedisIdempotencyStore.builder(shared.client).keyPrefix(shared.prefix).build();
                store.inspect(IdempotencyKey.of("bench", "connect")); // opens its connection, loads the scripts
            }
            prefixBytes = (shared.prefix + "set:" + keyBase).getBytes(UTF_8);
        }

        @TearDown(Level.Trial)
        public void close() {
            if (connection != null) {
                connection.close();
            }
            if (store != null) {
                store.close();
            }
        }

        private String nextKey() {
            return keyBase + sequence++;
        }

        Object claim() {
            String key = nextKey();
            if (plain) {
                return setNxEx(key);
            }
            return tryClaim(key);
        }

        Object claimAndComplete() {
            String key = nextKey();
            if (plain) {
                byte[] redisKey = redisKey(key);
                String claimed = commands.set(redisKey, FINGERPRINT.bytes(), SetArgs.Builder.nx().ex(RETENTION));
                if (!"OK".equals(claimed)) {
                    throw new IllegalStateException("SET NX of a fresh key answered " + claimed);
                }
                return commands.set(redisKey, responseBytes, SetArgs.Builder.xx().ex(RETENTION));
            }
            OwnerToken token = ((ClaimResult.Claimed) tryClaim(key)).token();
            FencedWrite written = store.complete(IdempotencyKey.of("bench", key), token, RESPONSE, RETENTION);
            if (!(written instanceof FencedWrite.Committed)) {
                throw new IllegalStateException("complete of a fresh claim answered " + written);
            }
            return written;
        }

        private String setNxEx(String key) {
            String answer = commands.set(redisKey(key), FINGERPRINT.bytes(), SetArgs.Builder.nx().ex(RETENTION));
            if (!"OK".equals(answer)) {
                throw new IllegalStateException("SET NX of a fresh key answered " + answer);
            }
            return answer;
        }

        private ClaimResult tryClaim(String key) {
            ClaimResult result = store.tryClaim(new ClaimRequest(IdempotencyKey.of("bench", key), FINGERPRINT,
                    OwnerToken.random(), LEASE, RETENTION));
            if (!(result instanceof ClaimResult.Claimed)) {
                throw new IllegalStateException("claim of a fresh key answered " + result);
            }
            return result;
        }

        private byte[] redisKey(String key) {
            byte[] k = key.getBytes(UTF_8);
            byte[] out = new byte[prefixBytes.length + k.length];
            System.arraycopy(prefixBytes, 0, out, 0, prefixBytes.length);
            System.arraycopy(k, 0, out, prefixBytes.length, k.length);
            return out;
        }
    }

    @Benchmark
    public Object claim(Connection c) {
        return c.claim();
    }

    @Benchmark
    public Object claimAndComplete(Connection c) {
        return c.claimAndComplete();
    }

    /** Both thread counts in one invocation, with the JMH options given; then one table. */
    public static void main(String[] args) throws Exception {
        CommandLineOptions cli = new CommandLineOptions(args);
        List<RunResult> results = new ArrayList<>();
        for (int threads : THREAD_COUNTS) {
            results.addAll(new Runner(new OptionsBuilder().parent(cli)
                    .include("\\." + RedisClaimBenchmark.class.getSimpleName() + "\\.").threads(threads).build()).run());
        }
        System.out.println(table(results));
    }

    static String table(Collection<RunResult> results) {
        StringBuilder s = new StringBuilder("| operation | connections | variant | ops/s | ± (99.9 %) | vs setNxEx |\n");
        s.append("| --- | ---: | --- | ---: | ---: | ---: |\n");
        for (RunResult r : results) {
            String method = r.getParams().getBenchmark().substring(r.getParams().getBenchmark().lastIndexOf('.') + 1);
            int threads = r.getParams().getThreads();
            String variant = r.getParams().getParam("variant");
            double score = r.getPrimaryResult().getScore();
            double floor = results.stream().filter(o -> o.getParams().getBenchmark().equals(r.getParams().getBenchmark())
                    && o.getParams().getThreads() == threads && "setNxEx".equals(o.getParams().getParam("variant")))
                    .mapToDouble(o -> o.getPrimaryResult().getScore()).findFirst().orElse(Double.NaN);
            double error = r.getPrimaryResult().getScoreError();
            s.append(String.format(Locale.ROOT, "| %s | %d | %s | %.0f | %s | %.2f |%n", method, threads, variant, score,
                    Double.isNaN(error) ? "–" : String.format(Locale.ROOT, "%.0f", error), score / floor));
        }
        return s.toString();
    }
}
