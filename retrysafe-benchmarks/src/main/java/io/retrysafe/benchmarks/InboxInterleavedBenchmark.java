package io.retrysafe.benchmarks;

import io.retrysafe.testservices.TestDatabases;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * The consumer of {@link InboxBenchmark}, with the variants taking turns inside one trial (as
 * {@link PaymentInterleavedBenchmark} does for the payment): every {@code cycleMillis} is split into
 * equal slices, one per variant, and all threads run the variant whose slice the clock is in, so
 * background load that drifts weighs on every variant alike. Each variant has its own message
 * sequence, so its duplicates are redeliveries of its own recent messages.
 *
 * <p>Read the secondary results: deliveries of each variant per second of the whole iteration, so
 * each is 1/n of that variant's throughput and their ratios are the ratios of throughput. Keep
 * {@code -r} a whole number of cycles.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar InboxInterleavedBenchmark -f 1 -wi 2 -w 4s -i 10 -r 8s -t 1
 * java -jar retrysafe-benchmarks/target/benchmarks.jar InboxInterleavedBenchmark -f 1 -wi 2 -w 4s -i 10 -r 8s -t 8
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 4)
@Measurement(iterations = 10, time = 8)
@State(Scope.Benchmark)
public class InboxInterleavedBenchmark {

    /** Variants of {@link InboxBenchmark#variant}, separated by {@code +}, taking turns in this order. */
    @Param({"bare+retrysafe+rabbitmq+camel+springIntegration"})
    public String variants;

    /** The fraction of deliveries that are redeliveries, 0 to 1. */
    @Param({"0", "0.1"})
    public double duplicates;

    @Param({"1000"})
    public long cycleMillis;

    private InboxWorkload workload;
    private InboxWorkload.Variant[] turns;
    private InboxWorkload.Messages[] messages;
    private long sliceNanos;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        if (!(duplicates >= 0 && duplicates <= 1)) {
            throw new IllegalArgumentException("duplicates must be between 0 and 1, but was " + duplicates);
        }
        turns = Arrays.stream(variants.split("\\+")).map(String::strip).map(InboxWorkload.Variant::parse)
                .toArray(InboxWorkload.Variant[]::new);
        if (cycleMillis < turns.length) {
            throw new IllegalArgumentException("cycleMillis must give each variant at least 1 ms, but was "
                    + cycleMillis + " for " + turns.length + " variants");
        }
        sliceNanos = TimeUnit.MILLISECONDS.toNanos(cycleMillis) / turns.length;
        messages = new InboxWorkload.Messages[InboxWorkload.Variant.values().length];
        for (int i = 0; i < messages.length; i++) {
            messages[i] = new InboxWorkload.Messages();
        }
        workload = InboxWorkload.open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), params.getThreads() + 2);
        workload.reset();
    }

    /** See {@code PaymentWorkload.analyze()}: plans as autovacuum would keep them, not those of the empty tables. */
    @Setup(Level.Iteration)
    public void analyze() throws Exception {
        workload.analyze();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        if (workload != null) {
            try {
                workload.dropTables();
            } finally {
                workload.close();
            }
        }
    }

    /** Deliveries per variant, counted where each started. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Deliveries {
        public long bare;
        public long retrysafe;
        public long rabbitmq;
        public long camel;
        public long springIntegration;

        @Setup(Level.Iteration)
        public void clear() {
            bare = 0;
            retrysafe = 0;
            rabbitmq = 0;
            camel = 0;
            springIntegration = 0;
        }

        void count(InboxWorkload.Variant variant) {
            switch (variant) {
                case BARE -> bare++;
                case RETRYSAFE -> retrysafe++;
                case RABBITMQ -> rabbitmq++;
                case CAMEL -> camel++;
                case SPRING_INTEGRATION -> springIntegration++;
            }
        }
    }

    @Benchmark
    public InboxWorkload.Verdict message(Deliveries deliveries) throws Exception {
        InboxWorkload.Variant variant = turns[(int) ((System.nanoTime() / sliceNanos) % turns.length)];
        InboxWorkload.Verdict verdict = workload.deliver(variant,
                messages[variant.ordinal()].next(duplicates, InboxBenchmark.DUPLICATE_WINDOW), false);
        if (verdict == InboxWorkload.Verdict.FAILED) {
            throw new IllegalStateException("no failure was injected, but a delivery failed");
        }
        deliveries.count(variant);
        return verdict;
    }
}
