package io.retrysafe.benchmarks;

import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What each consumer of {@link InboxBenchmark} lets through, counted in the database: the same
 * duplicate-heavy deliveries go to every variant, and the orders booked per message are counted.
 * Not a benchmark (nothing is timed); its table belongs next to the throughput numbers.
 *
 * <ol>
 *   <li><b>Concurrent copies</b>: {@code messages} messages, each delivered {@code copies} times; the
 *       copies of a message are handed out one after another to {@code threads} threads, so they
 *       arrive at nearly the same moment (a producer retry, a rebalance). Right: every message
 *       booked once.
 *   <li><b>A copy during a failing attempt</b>: for each of {@code failing} messages, a first copy
 *       whose work fails after 300 ms in its transaction (a consumer that crashes before its commit),
 *       and a second copy delivered 100 ms after the first started. Right: booked once, by the second
 *       copy, which must either wait for the first to end or be told to come back. An inbox that
 *       cannot tell "in progress" from "done" skips the second copy as a duplicate, and when the first
 *       one's mark is removed the message is booked by nobody: lost unless the broker redelivers the
 *       failed copy itself.
 * </ol>
 *
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.InboxDuplicates \
 *     [messages=500] [copies=4] [threads=8] [failing=40]
 * </pre>
 * Tables as in {@link InboxWorkload}, dropped at the end. PostgreSQL as in {@link TestDatabases}.
 */
public final class InboxDuplicates {

    private InboxDuplicates() {}

    public static void main(String[] args) throws Exception {
        int messages = arg(args, 0, 500);
        int copies = arg(args, 1, 4);
        int threads = arg(args, 2, 8);
        int failing = arg(args, 3, 40);
        System.out.printf(Locale.ROOT, "Concurrent copies: %d messages x %d copies on %d threads."
                + " Failing attempt: %d messages, each a failing first copy and a second copy 100 ms later.%n%n",
                messages, copies, threads, failing);
        System.out.println("| variant | deliveries | processed | skipped | retry later | booked 0x | booked 1x"
                + " | booked 2x+ | extra bookings | failing attempt: booked 0x | 1x | 2x+ |");
        System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        try (InboxWorkload workload = InboxWorkload.open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), threads + 2)) {
            try {
                for (InboxWorkload.Variant variant : InboxWorkload.Variant.values()) {
                    workload.reset();
                    InboxWorkload.Messages source = new InboxWorkload.Messages();
                    Map<InboxWorkload.Verdict, AtomicInteger> verdicts = concurrentCopies(workload, variant, source,
                            messages, copies, threads);
                    int[] booked = booked(workload, source, 0, messages);
                    failingAttempt(workload, variant, source, messages, failing, threads);
                    int[] bookedFailing = booked(workload, source, messages, messages + failing);
                    System.out.printf(Locale.ROOT, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |%n",
                            variant.label(), messages * copies, verdicts.get(InboxWorkload.Verdict.PROCESSED).get(),
                            verdicts.get(InboxWorkload.Verdict.SKIPPED).get(),
                            verdicts.get(InboxWorkload.Verdict.RETRY).get(), booked[0], booked[1], booked[2], booked[3],
                            bookedFailing[0], bookedFailing[1], bookedFailing[2]);
                }
            } finally {
                workload.dropTables();
            }
        }
    }

    private static int arg(String[] args, int index, int defaultValue) {
        if (args.length <= index) {
            return defaultValue;
        }
        int value = Integer.parseInt(args[index]);
        if (value < 1) {
            throw new IllegalArgumentException("argument " + (index + 1) + " must be at least 1, but was " + value);
        }
        return value;
    }

    private static Map<InboxWorkload.Verdict, AtomicInteger> concurrentCopies(InboxWorkload workload,
            InboxWorkload.Variant variant, InboxWorkload.Messages source, int messages, int copies, int threads)
            throws Exception {
        Map<InboxWorkload.Verdict, AtomicInteger> verdicts = new EnumMap<>(InboxWorkload.Verdict.class);
        for (InboxWorkload.Verdict v : InboxWorkload.Verdict.values()) {
            verdicts.put(v, new AtomicInteger());
        }
        AtomicInteger next = new AtomicInteger();
        int deliveries = messages * copies;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    for (int i = next.getAndIncrement(); i < deliveries; i = next.getAndIncrement()) {
                        verdicts.get(workload.deliver(variant, source.message(i / copies), false)).incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(10, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        return verdicts;
    }

    /** Messages {@code first} to {@code first + failing - 1}: a failing copy, and 100 ms later a good one. */
    private static void failingAttempt(InboxWorkload workload, InboxWorkload.Variant variant,
            InboxWorkload.Messages source, int first, int failing, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            for (int batch = 0; batch < failing; batch += threads / 2) {
                List<Future<?>> done = new ArrayList<>();
                for (int n = first + batch; n < first + Math.min(failing, batch + threads / 2); n++) {
                    InboxWorkload.Message m = source.message(n);
                    done.add(pool.submit(() -> workload.deliver(variant, m, true)));
                }
                Thread.sleep(100); // the good copies arrive while the failing ones hold their writes (300 ms)
                for (int n = first + batch; n < first + Math.min(failing, batch + threads / 2); n++) {
                    InboxWorkload.Message m = source.message(n);
                    done.add(pool.submit(() -> workload.deliver(variant, m, false)));
                }
                for (Future<?> f : done) {
                    f.get(1, TimeUnit.MINUTES);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** For messages {@code from} to {@code to - 1}: how many were booked 0, 1, 2+ times, and the bookings beyond one. */
    private static int[] booked(InboxWorkload workload, InboxWorkload.Messages source, int from, int to)
            throws Exception {
        StringBuilder ids = new StringBuilder();
        for (int n = from; n < to; n++) {
            ids.append(n == from ? "" : ",").append('\'').append(source.message(n).id()).append('\'');
        }
        int[] result = new int[4];
        try (Connection c = workload.dataSource().getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(o.id) FROM unnest(ARRAY[" + ids + "]::varchar[]) AS m(id)"
                        + " LEFT JOIN rs_bench_inbox_order o ON o.message_id = m.id GROUP BY m.id")) {
            while (rs.next()) {
                int n = rs.getInt(1);
                result[Math.min(n, 2)]++;
                result[3] += Math.max(0, n - 1);
            }
        }
        return result;
    }
}
