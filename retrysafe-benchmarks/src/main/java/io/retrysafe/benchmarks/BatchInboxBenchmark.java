package io.retrysafe.benchmarks;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
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
 * The two ways a batch listener's records can each take effect once, on PostgreSQL, side by side in
 * one trial: each thread's calls alternate between them, so both see the same load at the same time
 * and the same number of batches.
 *
 * <ul>
 *   <li>{@code oneTransaction}: one transaction for the whole batch: each record's key claimed (a
 *       savepoint each, {@link TransactionalRetrySafe#join}), the work of every record, each outcome
 *       stored, one commit;
 *   <li>{@code perRecord}: one transaction per record ({@link TransactionalRetrySafe#execute}): claim,
 *       work, outcome, commit, {@code batchSize} times.
 * </ul>
 *
 * The work of a record is {@link InboxBenchmark}'s: insert the order, update its customer's counter.
 * Every record is a new message. The secondary results are the milliseconds each design spent (its
 * batches are as many as the other's, give or take one, so their ratio is the ratio of time per
 * batch); each iteration also prints its ratio {@code perRecord / oneTransaction}, and the trial the
 * ratios' mean, minimum and maximum. Keep iterations long enough for several batches each.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar BatchInboxBenchmark -f 1 -wi 2 -w 4s -i 6 -r 4s -t 1
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 4)
@Measurement(iterations = 6, time = 4)
@State(Scope.Benchmark)
public class BatchInboxBenchmark {
    private static final ResponseCodec<String> POSITION = ResponseCodec.utf8();
    private static final String SCOPE = "kafka:" + InboxWorkload.GROUP + ":" + InboxWorkload.TOPIC;

    /** Records per batch (a consumer's {@code max.poll.records} is 500 by default). */
    @Param({"10", "50", "100"})
    public int batchSize;

    private InboxWorkload workload;
    private TransactionalRetrySafe inbox;
    private final InboxWorkload.Messages messages = new InboxWorkload.Messages();

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        workload = InboxWorkload.open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), params.getThreads() + 2);
        workload.reset();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(workload.dataSource())
                .table(InboxWorkload.RECORD_TABLE).build();
        inbox = TransactionalRetrySafe.of(RetrySafe.builder(store).name("bench-batch").build());
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

    /** Milliseconds each design spent. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Spent {
        public double oneTransactionMillis;
        public double perRecordMillis;
        private long calls;
        private final List<Double> ratios = new ArrayList<>();

        @Setup(Level.Iteration)
        public void clear() {
            oneTransactionMillis = 0;
            perRecordMillis = 0;
        }

        @TearDown(Level.Iteration)
        public void report() {
            if (oneTransactionMillis > 0 && perRecordMillis > 0) {
                double ratio = perRecordMillis / oneTransactionMillis;
                ratios.add(ratio);
                System.out.printf("%n[batch-inbox] perRecord / oneTransaction = %.2f%n", ratio);
            }
        }

        @TearDown(Level.Trial)
        public void summary() {
            System.out.printf("%n[batch-inbox] ratio perRecord / oneTransaction over %d iterations: mean %.2f,"
                    + " min %.2f, max %.2f%n", ratios.size(),
                    ratios.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN),
                    ratios.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN),
                    ratios.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN));
        }
    }

    @Benchmark
    public int batch(Spent spent) throws Exception {
        List<InboxWorkload.Message> batch = new ArrayList<>(batchSize);
        for (int i = 0; i < batchSize; i++) {
            batch.add(messages.next(0, 1));
        }
        long start = System.nanoTime();
        if (spent.calls++ % 2 == 0) {
            oneTransaction(batch);
            spent.oneTransactionMillis += (System.nanoTime() - start) / 1e6;
        } else {
            transactionPerRecord(batch);
            spent.perRecordMillis += (System.nanoTime() - start) / 1e6;
        }
        return batch.size();
    }

    /** Design (a): every key and every record's work in one transaction, one commit. */
    private int oneTransaction(List<InboxWorkload.Message> batch) throws SQLException {
        try (Connection c = workload.dataSource().getConnection()) {
            c.setAutoCommit(false);
            try {
                List<TransactionalRetrySafe.Joined<String>> joined = new ArrayList<>(batch.size());
                claimFrom(c, batch, 0, joined);
                c.commit();
                joined.forEach(TransactionalRetrySafe.Joined::committed);
                return joined.size();
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** Claims record {@code i}'s key, and inside its claim the rest; the work of all once every key is claimed. */
    private void claimFrom(Connection c, List<InboxWorkload.Message> batch, int i,
            List<TransactionalRetrySafe.Joined<String>> joined) throws SQLException {
        if (i == batch.size()) {
            for (InboxWorkload.Message m : batch) {
                InboxWorkload.book(c, m, false);
            }
            return;
        }
        InboxWorkload.Message m = batch.get(i);
        TransactionalRetrySafe.Joined<String> claim = inbox.join(c, key(m), fingerprint(m), POSITION, attempt -> {
            try {
                claimFrom(c, batch, i + 1, joined);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            return m.id();
        });
        if (!claim.commit()) {
            throw new IllegalStateException("every message is new, but " + claim.outcome());
        }
        joined.add(claim);
    }

    /** Design (b): each record in a transaction of its own. */
    private int transactionPerRecord(List<InboxWorkload.Message> batch) throws SQLException {
        int done = 0;
        for (InboxWorkload.Message m : batch) {
            try (Connection c = workload.dataSource().getConnection()) {
                Outcome<String> outcome = inbox.execute(c, key(m), fingerprint(m), POSITION, attempt -> {
                    try {
                        InboxWorkload.book(c, m, false);
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                    return m.id();
                });
                if (!(outcome instanceof Outcome.Executed<String>)) {
                    throw new IllegalStateException("every message is new, but " + outcome);
                }
                done++;
            }
        }
        return done;
    }

    private static IdempotencyKey key(InboxWorkload.Message m) {
        return IdempotencyKey.of(SCOPE, m.id());
    }

    private static Fingerprint fingerprint(InboxWorkload.Message m) {
        return Fingerprint.sha256(m.json().getBytes(StandardCharsets.UTF_8));
    }
}
