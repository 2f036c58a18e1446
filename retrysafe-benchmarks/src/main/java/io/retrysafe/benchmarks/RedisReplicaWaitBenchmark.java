package io.retrysafe.benchmarks;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisClient;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
 * What {@code waitForReplicas} costs: a claim and a completion of {@link RedisIdempotencyStore} on a private master
 * with two replicas under a Sentinel (as in the failover test), without waiting ({@code waitFor=0}) and waiting for
 * one replica's acknowledgement after each ({@code waitFor=1}). One store for every thread, as a service instance
 * has: the store's one connection carries every thread's commands, and each {@code WAIT} holds it for a replica's
 * round trip.
 *
 * <p>{@link #main} runs the two variants in turn, three rounds of each by default ({@code -Dretrysafe.rounds=N}),
 * each round with the JMH options given, and prints each round's ratio and their median and range:
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.RedisReplicaWaitBenchmark -f 1 -wi 2 -w 5s -i 4 -r 5s -t 8
 * </pre>
 * Needs {@code redis-server} on the {@code PATH}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 4, time = 5)
@State(Scope.Benchmark)
public class RedisReplicaWaitBenchmark {
    private static final Duration REPLICA_TIMEOUT = Duration.ofMillis(500);

    @Param({"0", "1"})
    public int waitFor;

    private Path dir;
    private TestRedis.Replicated redis;
    private RedisClient client;
    private RedisIdempotencyStore store;
    private final AtomicLong sequence = new AtomicLong();
    private final String run = UUID.randomUUID().toString().substring(0, 8);

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("retrysafe-bench-redis-");
        redis = TestRedis.startReplicated(dir, 2, 1, "bench", Duration.ofSeconds(5));
        client = RedisClient.create(redis.uri());
        RedisIdempotencyStore.Builder builder = RedisIdempotencyStore.builder(client);
        if (waitFor > 0) {
            builder.waitForReplicas(waitFor, REPLICA_TIMEOUT);
        }
        store = builder.build();
        store.inspect(IdempotencyKey.of("bench", "connect")); // opens its connection, loads the scripts
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        store.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        redis.close();
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    @Benchmark
    public FencedWrite claimAndComplete() {
        IdempotencyKey key = IdempotencyKey.of("bench", run + "-" + sequence.incrementAndGet());
        ClaimResult claimed = store.tryClaim(new ClaimRequest(key, RedisClaimBenchmark.FINGERPRINT, OwnerToken.random(),
                RedisClaimBenchmark.LEASE, RedisClaimBenchmark.RETENTION));
        if (!(claimed instanceof ClaimResult.Claimed c)) {
            throw new IllegalStateException("claim of a fresh key answered " + claimed);
        }
        FencedWrite written = store.complete(key, c.token(), RedisClaimBenchmark.RESPONSE,
                RedisClaimBenchmark.RETENTION);
        if (!(written instanceof FencedWrite.Committed)) {
            throw new IllegalStateException("complete of a fresh claim answered " + written);
        }
        return written;
    }

    /** Rounds of both variants in turn; each round's ratio (waiting / not), then their median and range. */
    public static void main(String[] args) throws Exception {
        CommandLineOptions cli = new CommandLineOptions(args);
        int rounds = Integer.getInteger("retrysafe.rounds", 3);
        List<Double> ratios = new ArrayList<>();
        StringBuilder table = new StringBuilder("| round | waitFor=0 ops/s | waitFor=1 ops/s | ratio |\n"
                + "| ---: | ---: | ---: | ---: |\n");
        for (int round = 1; round <= rounds; round++) {
            double[] score = new double[2];
            for (int w = 0; w <= 1; w++) {
                RunResult r = new Runner(new OptionsBuilder().parent(cli)
                        .include("\\." + RedisReplicaWaitBenchmark.class.getSimpleName() + "\\.")
                        .param("waitFor", Integer.toString(w)).build()).runSingle();
                score[w] = r.getPrimaryResult().getScore();
            }
            ratios.add(score[1] / score[0]);
            table.append(String.format(Locale.ROOT, "| %d | %.0f | %.0f | %.2f |%n", round, score[0], score[1],
                    score[1] / score[0]));
        }
        List<Double> sorted = ratios.stream().sorted().toList();
        System.out.println(table);
        System.out.printf(Locale.ROOT, "waitFor=1 / waitFor=0: %.2f (%.2f–%.2f) over %d rounds%n",
                sorted.get(sorted.size() / 2), sorted.get(0), sorted.get(sorted.size() - 1), rounds);
    }
}
