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
 * The payment of {@link PaymentTransactionBenchmark}, with the variants taking turns inside one
 * trial, for a machine whose background load drifts (shared CI hosts, laptops): every
 * {@code cycleMillis} is split into equal slices, one per variant, and all threads run the variant
 * whose slice the clock is in. Load that changes more slowly than a cycle then weighs on every
 * variant alike, which sequential trials cannot promise.
 *
 * <p>Read the secondary results (JMH aux counters): payments of each variant per second of the
 * whole iteration, so each is 1/n of that variant's throughput and their ratios are the ratios of
 * throughput. Keep {@code -r} a whole number of cycles (whole seconds with the default 1000 ms),
 * so every variant gets the same time in each iteration.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar PaymentInterleavedBenchmark -f 1 -wi 2 -w 5s -i 10 -r 10s -t 8
 * java -jar retrysafe-benchmarks/target/benchmarks.jar PaymentInterleavedBenchmark -f 1 -wi 2 -w 6s -i 10 -r 9s -t 8 \
 *     -p cycleMillis=3000 -p variants=bare+transactional+bare_plus_select1+bare_plus_insert+transactional_hot+insert_last
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 10, time = 10)
@State(Scope.Benchmark)
public class PaymentInterleavedBenchmark {

    /**
     * Variants of {@link PaymentTransactionBenchmark#variant}, separated by {@code +}, taking turns in
     * this order (not commas: on JMH's command line {@code -p variants=a,b} means two trials).
     */
    @Param({"bare+transactional+standalone"})
    public String variants;

    @Param({"1000"})
    public long cycleMillis;

    private PaymentWorkload workload;
    private PaymentWorkload.Variant[] turns;
    private long sliceNanos;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        turns = Arrays.stream(variants.split("\\+")).map(String::strip).map(PaymentWorkload.Variant::parse)
                .toArray(PaymentWorkload.Variant[]::new);
        if (cycleMillis < turns.length) {
            throw new IllegalArgumentException("cycleMillis must give each variant at least 1 ms, but was "
                    + cycleMillis + " for " + turns.length + " variants");
        }
        sliceNanos = TimeUnit.MILLISECONDS.toNanos(cycleMillis) / turns.length;
        workload = PaymentWorkload.open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), params.getThreads() + 2);
        workload.reset();
    }

    /** See {@link PaymentWorkload#analyze()}: plans as autovacuum would keep them, not those of the empty tables. */
    @Setup(Level.Iteration)
    public void analyze() throws Exception {
        workload.analyze();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (workload != null) {
            workload.close();
        }
    }

    /** Payments per variant, counted where each started. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Payments {
        public long bare;
        public long transactional;
        public long standalone;
        public long bare_plus_select1;
        public long bare_plus_insert;
        public long transactional_hot;
        public long insert_last;
        public long key_last;
        public long key_last_no_lookup;
        public long call_then_transaction;
        public long phased;

        @Setup(Level.Iteration)
        public void clear() {
            bare = 0;
            transactional = 0;
            standalone = 0;
            bare_plus_select1 = 0;
            bare_plus_insert = 0;
            transactional_hot = 0;
            insert_last = 0;
            key_last = 0;
            key_last_no_lookup = 0;
            call_then_transaction = 0;
            phased = 0;
        }

        void count(PaymentWorkload.Variant variant) {
            // Every variant needs its counter here: one without would read as no payments at all.
            switch (variant) {
                case BARE -> bare++;
                case TRANSACTIONAL -> transactional++;
                case STANDALONE -> standalone++;
                case BARE_PLUS_SELECT1 -> bare_plus_select1++;
                case BARE_PLUS_INSERT -> bare_plus_insert++;
                case TRANSACTIONAL_HOT -> transactional_hot++;
                case INSERT_LAST -> insert_last++;
                case KEY_LAST -> key_last++;
                case KEY_LAST_NO_LOOKUP -> key_last_no_lookup++;
                case CALL_THEN_TRANSACTION -> call_then_transaction++;
                case PHASED -> phased++;
            }
        }
    }

    @Benchmark
    public String payment(Payments payments) throws Exception {
        PaymentWorkload.Variant variant = turns[(int) ((System.nanoTime() / sliceNanos) % turns.length)];
        String receipt = workload.pay(variant);
        payments.count(variant);
        return receipt;
    }
}
