package io.retrysafe.benchmarks;

import io.retrysafe.testservices.TestDatabases;
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
 * Messages per second of a consumer that books one order per message (insert the order, update its
 * customer's counter, one transaction) on PostgreSQL, without deduplication and behind each inbox
 * (see {@link InboxWorkload.Variant}):
 *
 * <ul>
 *   <li>{@code bare}: no deduplication (a duplicate is booked again);
 *   <li>{@code retrysafe}: {@code KafkaInbox.process} with in-memory Kafka records, the
 *       id marked in the business transaction;
 *   <li>{@code rabbitmq}: the same inbox through {@code RabbitInbox.process}, with in-memory AMQP
 *       deliveries;
 *   <li>{@code camel}: Camel's {@code JdbcMessageIdRepository.add(id)} (its own transaction, on the
 *       table Camel creates), then the business transaction;
 *   <li>{@code springIntegration}: {@code JdbcMetadataStore.putIfAbsent(id)} on its documented table,
 *       in one Spring transaction with the business writes.
 * </ul>
 *
 * Messages come from memory, a fraction {@code duplicates} of them redeliveries of one of the last
 * 100 messages (throughput counts every delivery, duplicates included). Run once per thread count,
 * all variants and duplicate fractions in one invocation:
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar InboxBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 1
 * java -jar retrysafe-benchmarks/target/benchmarks.jar InboxBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 8
 * </pre>
 * The variants run one after another, so their ratios are only as good as the machine's drift
 * allows; {@link InboxInterleavedBenchmark} runs them taking turns instead.
 * The secondary results count deliveries processed, skipped as duplicates, and {@code retry} (the
 * inbox could not decide, e.g. a lock timeout: the message would be redelivered) per second; a
 * retry is counted, not redelivered.
 *
 * <p>PostgreSQL: {@code RETRYSAFE_PG_URL} / {@code _USER} / {@code _PASSWORD}, default
 * {@code jdbc:postgresql://127.0.0.1:5432/test} as {@code postgres} (see {@link TestDatabases}).
 * Each trial gets its own pool (threads + 2 connections) and empties the tables first; the last
 * trial's tables are dropped at its end. {@link InboxDuplicates} checks what each variant lets through.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
@State(Scope.Benchmark)
public class InboxBenchmark {
    /** Duplicates are redeliveries of one of this many most recent messages. */
    static final int DUPLICATE_WINDOW = 100;

    @Param({"bare", "retrysafe", "rabbitmq", "camel", "springIntegration"})
    public String variant;

    /** The fraction of deliveries that are redeliveries, 0 to 1. */
    @Param({"0", "0.1"})
    public double duplicates;

    private InboxWorkload workload;
    private InboxWorkload.Variant selected;
    private InboxWorkload.Messages messages;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        if (!(duplicates >= 0 && duplicates <= 1)) {
            throw new IllegalArgumentException("duplicates must be between 0 and 1, but was " + duplicates);
        }
        selected = InboxWorkload.Variant.parse(variant);
        workload = InboxWorkload.open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), params.getThreads() + 2);
        workload.reset();
        messages = new InboxWorkload.Messages();
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

    /** Deliveries by verdict, per second of the iteration. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Deliveries {
        public long processed;
        public long skipped;
        public long retry;

        @Setup(Level.Iteration)
        public void clear() {
            processed = 0;
            skipped = 0;
            retry = 0;
        }
    }

    @Benchmark
    public InboxWorkload.Verdict message(Deliveries deliveries) throws Exception {
        InboxWorkload.Verdict verdict = workload.deliver(selected, messages.next(duplicates, DUPLICATE_WINDOW), false);
        switch (verdict) {
            case PROCESSED -> deliveries.processed++;
            case SKIPPED -> deliveries.skipped++;
            case RETRY -> deliveries.retry++;
            case FAILED -> throw new IllegalStateException("no failure was injected, but a delivery failed");
        }
        return verdict;
    }
}
