package io.retrysafe.benchmarks;

import io.retrysafe.testservices.TestDatabases;
import java.util.concurrent.TimeUnit;
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
 * A payment transaction on PostgreSQL (lock the account row, update its balance, insert the
 * payment, insert a ledger entry, commit), bare and under RetrySafe's two modes:
 *
 * <ul>
 *   <li>{@code bare}: the transaction alone;
 *   <li>{@code transactional}: inside {@code TransactionalRetrySafe.execute}, a fresh key each time;
 *   <li>{@code standalone}: inside {@code RetrySafe.execute} on the JDBC store, the transaction on
 *       its own connection (claim committed before, completion after).
 * </ul>
 *
 * <p>Run once per thread count, so that the variants' ratios come from one invocation:
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar PaymentTransactionBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 1
 * java -jar retrysafe-benchmarks/target/benchmarks.jar PaymentTransactionBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 8
 * </pre>
 * The variants run one after another, so on a machine whose load drifts their ratios are only as
 * good as that drift allows; {@link PaymentInterleavedBenchmark} runs them taking turns instead.
 * Investigation variants ({@code bare_plus_select1}, {@code bare_plus_insert},
 * {@code transactional_hot}, {@code insert_last}, see {@link PaymentWorkload.Variant}) are selected
 * with {@code -p variant=bare,transactional_hot,...}. The checkout that calls out, as one transaction after
 * an unprotected provider call and as a phased operation, side by side:
 * {@code -p variant=call_then_transaction,phased}.
 *
 * <p>PostgreSQL: {@code RETRYSAFE_PG_URL} / {@code _USER} / {@code _PASSWORD}, default
 * {@code jdbc:postgresql://127.0.0.1:5432/test} as {@code postgres} (see {@link TestDatabases}).
 * Each trial gets its own pool (threads + 2 connections) and empties the tables first.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
@State(Scope.Benchmark)
public class PaymentTransactionBenchmark {

    @Param({"bare", "transactional", "standalone"})
    public String variant;

    private PaymentWorkload workload;
    private PaymentWorkload.Variant selected;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        selected = PaymentWorkload.Variant.parse(variant);
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

    @Benchmark
    public String payment() throws Exception {
        return workload.pay(selected);
    }
}
