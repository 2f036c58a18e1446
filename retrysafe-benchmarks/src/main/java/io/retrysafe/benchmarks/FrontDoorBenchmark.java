package io.retrysafe.benchmarks;

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
 * What RetrySafe costs a service on the front doors without Spring: a payment (one insert into PostgreSQL) served
 * by Jersey or RESTEasy (Jakarta REST, on Grizzly and on Undertow) or by gRPC (Netty), with RetrySafe off,
 * in standalone mode and, for Jakarta REST, in transactional mode; and the Quarkus example
 * ({@code examples/payments-quarkus}, packaged first) with RetrySafe off and transactional, its own payment. One
 * server per mode runs throughout; the modes take turns inside one trial as in {@link PaymentInterleavedBenchmark},
 * so load that drifts slower than a cycle weighs on each alike. Client and servers share the JVM (the Quarkus
 * example runs in processes of its own), and so the cores, as they do for every mode.
 *
 * <p>Read the secondary results (aux counters): payments per mode per second of the whole iteration; their ratio
 * to {@code off} is what RetrySafe keeps of the service's throughput. Each door is a trial of its own (a fresh
 * JVM: one Jakarta REST implementation per JVM). Keep {@code -r} a whole number of cycles.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar FrontDoorBenchmark -f 1 -wi 2 -w 6s -i 10 -r 6s -t 8 \
 *     -p door=jersey,resteasy,grpc,quarkus
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 6)
@Measurement(iterations = 10, time = 6)
@State(Scope.Benchmark)
public class FrontDoorBenchmark {

    /** {@code jersey}, {@code resteasy}, {@code grpc} or {@code quarkus} (the packaged example). */
    @Param({"jersey", "resteasy", "grpc", "quarkus"})
    public String door;

    @Param({"1500"})
    public long cycleMillis;

    private FrontDoors.Door server;
    private FrontDoors.Mode[] turns;
    private long sliceNanos;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        server = FrontDoors.open(door, params.getThreads() + 2);
        turns = server.modes().toArray(FrontDoors.Mode[]::new);
        sliceNanos = TimeUnit.MILLISECONDS.toNanos(cycleMillis) / turns.length;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        if (server != null) {
            server.close();
        }
    }

    /** Payments per mode, counted where each started. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Payments {
        public long off;
        public long standalone;
        public long transactional;

        @Setup(Level.Iteration)
        public void clear() {
            off = 0;
            standalone = 0;
            transactional = 0;
        }

        void count(FrontDoors.Mode mode) {
            switch (mode) {
                case OFF -> off++;
                case STANDALONE -> standalone++;
                case TRANSACTIONAL -> transactional++;
            }
        }
    }

    @Benchmark
    public int payment(Payments payments) throws Exception {
        FrontDoors.Mode mode = turns[(int) ((System.nanoTime() / sliceNanos) % turns.length)];
        int status = server.pay(mode);
        if (status != 201) {
            throw new IllegalStateException(door + " " + mode + " answered " + status + ", not 201: "
                    + Arrays.toString(turns));
        }
        payments.count(mode);
        return status;
    }
}
