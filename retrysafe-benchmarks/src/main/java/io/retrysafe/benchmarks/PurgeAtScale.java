package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.PurgeResult;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Purge at scale, on PostgreSQL: a records table filled with {@code --rows} expired records (one
 * {@code INSERT … SELECT generate_series} per million), then {@code --threads} threads claiming and
 * completing new keys in a closed loop while the expired records are purged, (a) by the batch purge
 * of the standard layout ({@link io.retrysafe.jdbc.JdbcPurger}, bounded {@code DELETE}s) and (b) by
 * the partitioned layout's drop of whole expiry days (the same rows spread over {@code --days} past
 * days). For each, the claim latency (p50, p99, max) before, during and after the purge, the purge's
 * duration and rows per second, and the table's size on disk. The two layouts run one after the
 * other in one run, each on its own table ({@code rs_purge_bench_standard}, {@code
 * rs_purge_bench_partitioned}), dropped at the end (and on Ctrl-C). {@code --duty-cycle 1,0.5} runs each
 * layout once per share ({@link io.retrysafe.jdbc.JdbcPurger.Builder#maxDutyCycle(double)}; 1, batches back
 * to back, by default), each on a freshly filled table; the notes give each run's claims per second during
 * the purge over before it. Measured, the shares after the first in one invocation started from a slower
 * database (a quarter to half its claims per second before the purge), so compare shares one per
 * invocation, with a pause between them: the ratio is within each run, before against during.
 *
 * <p>Usage (build with {@code ./mvnw -q -pl retrysafe-benchmarks -am package -DskipTests -DskipITs}):
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.PurgeAtScale \
 *     [--rows 10000000] [--days 10] [--threads 4] [--baseline 20s] [--after 10s] [--batch-size 1000] \
 *     [--layouts standard,partitioned] [--duty-cycle 1,0.5] [--fill-order scattered] [--keep]
 * </pre>
 * {@code --fill-order scattered} (the default) spreads each day's rows over the whole table, so that a batch of
 * the purge deletes rows from as many pages as it has rows: the worst case for its writes. {@code expiry} writes
 * the rows in the order they expire, as a service whose records share one retention leaves them on disk, so that
 * a batch's rows share pages.
 * A quick comparison runs at a smaller {@code --rows}, e.g. {@code --rows 200000 --layouts standard
 * --duty-cycle 1,0.5 --baseline 10s --after 5s}; the fill takes a chunk of up to a million rows a statement.
 * The database is {@code RETRYSAFE_PG_URL} (or the test services' default, 127.0.0.1:5432/test).
 * Disk: about 250 bytes a record with both indexes, so 10 million need some 2.5 GB, one layout at
 * a time; the standard layout's table does not shrink after the purge (dead tuples are reused, not
 * returned) until it is dropped.
 */
public final class PurgeAtScale {
    private static final int FILL_CHUNK = 1_000_000;
    private static final Fingerprint FP = Fingerprint.sha256("bench".getBytes(StandardCharsets.UTF_8));
    private static final StoredResponse RESPONSE = StoredResponse.of(201, "{\"id\":1}".getBytes(StandardCharsets.UTF_8));

    private PurgeAtScale() {
    }

    public static void main(String[] args) throws Exception {
        Options o = Options.parse(args);
        System.out.printf(Locale.ROOT, "purge at scale: %,d expired rows (over %d days), %d claiming threads,"
                + " phases %ds before / during / %ds after, batch size %d, duty cycles %s, filled %s, on %s%n%n",
                o.rows, o.days, o.threads, o.baseline.toSeconds(), o.after.toSeconds(), o.batchSize, o.dutyCycles,
                o.expiryOrder ? "in expiry order" : "scattered", TestDatabases.postgresJdbcUrl());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(o.threads + 4);
        config.setPoolName("purge-at-scale");
        List<String> table = new ArrayList<>();
        table.add(String.format(Locale.ROOT, "| %-11s | %4s | %-6s | %9s | %10s | %8s | %9s | %7s | %7s | %9s |",
                "layout", "duty", "phase", "claims", "claims/s", "p50 ms", "p99 ms", "max ms", "purge s", "rows/s"));
        table.add("|-------------|------|--------|-----------|------------|----------|-----------|---------|---------|"
                + "-----------|");
        List<String> notes = new ArrayList<>();
        try (HikariDataSource pool = new HikariDataSource(config)) {
            Thread cleanup = new Thread(() -> o.layouts.forEach(l -> dropQuietly(pool, tableName(l))));
            Runtime.getRuntime().addShutdownHook(cleanup);
            for (JdbcLayout layout : o.layouts) {
                for (double dutyCycle : o.dutyCycles) {
                    try {
                        run(pool, layout, dutyCycle, o, table, notes);
                    } finally {
                        if (!o.keep) {
                            dropQuietly(pool, tableName(layout));
                        }
                    }
                }
            }
            if (!o.keep) {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            }
        }
        System.out.println();
        table.forEach(System.out::println);
        System.out.println();
        notes.forEach(System.out::println);
    }

    /** Rows {@code from} to {@code to} of the fill, expired over the past days; both layouts get the same rows. */
    static String fill(String table, LocalDate today, long from, long to, Options o) {
        String expiry = o.expiryOrder
                ? "(" + (o.days * 86_400L) + " * (g - 1)::bigint / " + o.rows + ") * interval '1 second' - interval '"
                        + o.days + " days'"
                : "(g % 86399) * interval '1 second' - (1 + g % " + o.days + ") * interval '1 day'";
        return "INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                + " lease_expires_at, completed_at, expires_at, response_status, response_headers, response_body)"
                + " SELECT 'fill', md5(g::text), decode(repeat('ab', 32), 'hex'), 'COMPLETED', gen_random_uuid(), 1,"
                + " e - interval '1 day', e - interval '1 day', e - interval '1 day', e, 201, '', '\\x7b7d'::bytea"
                + " FROM generate_series(" + from + ", " + to + ") g, LATERAL (SELECT '" + today
                + " 00:00:00+00'::timestamptz + " + expiry + " AS e) x";
    }

    static String tableName(JdbcLayout layout) {
        return layout == JdbcLayout.STANDARD ? "rs_purge_bench_standard" : "rs_purge_bench_partitioned";
    }

    private static void run(HikariDataSource pool, JdbcLayout layout, double dutyCycle, Options o, List<String> table,
            List<String> notes) throws Exception {
        String name = tableName(layout);
        String layoutName = layout == JdbcLayout.STANDARD ? "standard" : "partitioned";
        String label = o.dutyCycles.size() == 1 ? layoutName : layoutName + " at " + dutyCycle;
        exec(pool, "DROP TABLE IF EXISTS " + name);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(pool).layout(layout).table(name).build();
        store.createSchema();
        LocalDate today;
        try (Connection c = pool.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT (statement_timestamp() AT TIME ZONE 'UTC')::date")) {
            rs.next();
            today = rs.getObject(1, LocalDate.class);
        }
        if (layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
            store.partitions().build().maintain();
            // Past days, named as the job names them, so that its purge recognises and drops them.
            for (int d = 1; d <= o.days; d++) {
                LocalDate day = today.minusDays(d);
                exec(pool, "CREATE TABLE " + name + "_p" + day.format(DateTimeFormatter.BASIC_ISO_DATE) + " PARTITION OF "
                        + name + " FOR VALUES FROM ('" + day + " 00:00:00+00') TO ('" + day.plusDays(1) + " 00:00:00+00')");
            }
        }

        long fillStart = System.nanoTime();
        for (long from = 1; from <= o.rows; from += FILL_CHUNK) {
            long to = Math.min(o.rows, from + FILL_CHUNK - 1);
            exec(pool, fill(name, today, from, to, o));
            System.out.printf(Locale.ROOT, "%s: filled %,d rows%n", label, to);
        }
        exec(pool, "VACUUM ANALYZE " + name);
        // The fill's pages on disk now: a checkpoint forced later by its WAL (or by the previous run's purge)
        // would otherwise land in this run's baseline, which then depends on the order of the runs.
        try {
            exec(pool, "CHECKPOINT");
        } catch (SQLException e) {
            System.out.printf(Locale.ROOT, "%s: no CHECKPOINT after the fill (%s): the baseline may include one%n",
                    label, e.getMessage());
        }
        Duration fill = Duration.ofNanos(System.nanoTime() - fillStart);
        long filledBytes = bytes(pool, store);
        System.out.printf(Locale.ROOT, "%s: %,d rows in %.1f s, %,d MB with indexes%n", label, o.rows,
                fill.toMillis() / 1000.0, filledBytes >> 20);

        Load load = new Load(store, o.threads);
        load.start();
        try {
            load.phase("before", o.baseline);
            long purgeStart = System.nanoTime();
            load.begin("during");
            PurgeResult result = store.purger().batchSize(o.batchSize).maxBatches(Integer.MAX_VALUE)
                    .maxDutyCycle(dutyCycle).build().purge();
            Duration took = Duration.ofNanos(System.nanoTime() - purgeStart);
            load.end();
            load.phase("after", o.after);
            long purged = layout == JdbcLayout.STANDARD ? result.deleted() : o.rows;
            double seconds = took.toNanos() / 1e9;
            for (Load.Phase p : load.phases()) {
                boolean during = p.name().equals("during");
                table.add(String.format(Locale.ROOT, "| %-11s | %4s | %-6s | %,9d | %,10.0f | %8.2f | %9.2f | %7.1f | %7s"
                        + " | %9s |", layoutName, dutyCycle, p.name(), p.count(), p.count() / p.seconds(),
                        p.percentile(0.50), p.percentile(0.99),
                        p.percentile(1.0), during ? String.format(Locale.ROOT, "%.1f", seconds) : "",
                        during ? String.format(Locale.ROOT, "%,.0f", purged / seconds) : ""));
            }
            long afterBytes = bytes(pool, store);
            notes.add(String.format(Locale.ROOT, "%s: fill %.1f s; size %,d MB filled, %,d MB after the purge; purge %s;"
                    + " claims/s during / before %.2f; claim errors %d", label, fill.toMillis() / 1000.0,
                    filledBytes >> 20, afterBytes >> 20,
                    layout == JdbcLayout.STANDARD ? result.deleted() + " rows deleted in " + result.batches() + " batches"
                            : result.partitions().dropped().size() + " day partitions dropped, " + result.deleted()
                            + " rows deleted" + (result.partitions().failed().isEmpty() ? ""
                                    : ", failed " + result.partitions().failed()),
                    duringOverBefore(load.phases()), load.errors()));
            if (purged != o.rows) {
                notes.add(label + ": WARNING: " + purged + " of " + o.rows + " expired rows purged");
            }
        } finally {
            load.stop();
        }
    }

    /** Claims per second while the purge ran, over before it: what the purge left the claims. */
    static double duringOverBefore(List<Load.Phase> phases) {
        double before = Double.NaN;
        double during = Double.NaN;
        for (Load.Phase p : phases) {
            if (p.name().equals("before")) {
                before = p.count() / p.seconds();
            } else if (p.name().equals("during")) {
                during = p.count() / p.seconds();
            }
        }
        return during / before;
    }

    private static long bytes(HikariDataSource pool, JdbcIdempotencyStore store) throws SQLException {
        // The table, or its partitions, with indexes and TOAST data.
        try (Connection c = pool.getConnection(); java.sql.PreparedStatement ps = c.prepareStatement(
                "SELECT coalesce((SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits"
                        + " WHERE inhparent = to_regclass(?)), 0) + coalesce(pg_total_relation_size(to_regclass(?)), 0)")) {
            ps.setString(1, store.table());
            ps.setString(2, store.table());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static void exec(HikariDataSource pool, String sql) throws SQLException {
        try (Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static void dropQuietly(HikariDataSource pool, String name) {
        try {
            exec(pool, "DROP TABLE IF EXISTS " + name);
        } catch (SQLException | RuntimeException e) {
            System.err.println("could not drop " + name + ": " + e.getMessage());
        }
    }

    /**
     * The claims' own retention: longer than any purge here. Records that expired during the purge would be
     * purged too, and a paced purge slower than the claims (10M rows at a share of 0.15 took over an hour) would
     * chase them and never end.
     */
    private static final Duration CLAIM_RETENTION = Duration.ofDays(1);

    /** Closed loop: each thread claims a new key and completes it, again and again; the claim is timed. */
    static final class Load {
        private final JdbcIdempotencyStore store;
        private final int threads;
        private final List<Thread> workers = new ArrayList<>();
        private final List<Phase> phases = new ArrayList<>();
        private final AtomicInteger errors = new AtomicInteger();
        private volatile Phase current;
        private volatile boolean running = true;

        Load(JdbcIdempotencyStore store, int threads) {
            this.store = store;
            this.threads = threads;
        }

        void start() throws InterruptedException {
            current = new Phase("warmup", threads);
            CountDownLatch started = new CountDownLatch(threads);
            for (int i = 0; i < threads; i++) {
                int index = i;
                Thread t = new Thread(() -> {
                    started.countDown();
                    while (running) {
                        IdempotencyKey key = IdempotencyKey.of("load", UUID.randomUUID().toString());
                        OwnerToken token = OwnerToken.random();
                        Phase phase = current;
                        long t0 = System.nanoTime();
                        try {
                            ClaimResult r = store.tryClaim(new ClaimRequest(key, FP, token, Duration.ofMinutes(1),
                                    CLAIM_RETENTION));
                            phase.record(index, System.nanoTime() - t0);
                            if (r instanceof ClaimResult.Claimed) {
                                store.complete(key, token, RESPONSE, CLAIM_RETENTION);
                            } else {
                                errors.incrementAndGet();
                            }
                        } catch (RuntimeException e) {
                            errors.incrementAndGet();
                        }
                    }
                }, "claim-" + i);
                t.setDaemon(true);
                workers.add(t);
                t.start();
            }
            started.await();
            Thread.sleep(2_000); // warm-up: connections, JIT, server-side prepared statements
        }

        void phase(String name, Duration length) throws InterruptedException {
            begin(name);
            Thread.sleep(length.toMillis());
            end();
        }

        void begin(String name) {
            Phase p = new Phase(name, threads);
            phases.add(p);
            current = p;
        }

        void end() {
            current.end();
            current = new Phase("between", threads);
        }

        List<Phase> phases() {
            return phases;
        }

        int errors() {
            return errors.get();
        }

        void stop() throws InterruptedException {
            running = false;
            for (Thread t : workers) {
                t.join(30_000);
            }
        }

        /** Latencies of one phase, one growing array per thread (no sharing on the hot path). */
        static final class Phase {
            private final String name;
            private final long[][] samples;
            private final int[] counts;
            private final long start = System.nanoTime();
            private volatile long end;

            Phase(String name, int threads) {
                this.name = name;
                this.samples = new long[threads][1 << 14];
                this.counts = new int[threads];
            }

            void record(int thread, long nanos) {
                if (counts[thread] == samples[thread].length) {
                    samples[thread] = Arrays.copyOf(samples[thread], samples[thread].length * 2);
                }
                samples[thread][counts[thread]++] = nanos;
            }

            void end() {
                end = System.nanoTime();
            }

            String name() {
                return name;
            }

            double seconds() {
                return (end - start) / 1e9;
            }

            /** Read after the phase ended; a claim that straddled its end may still land, which is harmless. */
            long[] sorted() {
                int total = 0;
                for (int c : counts) {
                    total += c;
                }
                long[] all = new long[total];
                int at = 0;
                for (int i = 0; i < samples.length; i++) {
                    System.arraycopy(samples[i], 0, all, at, Math.min(counts[i], total - at));
                    at += counts[i];
                }
                Arrays.sort(all);
                return all;
            }

            int count() {
                return sorted().length;
            }

            double percentile(double q) {
                long[] s = sorted();
                if (s.length == 0) {
                    return Double.NaN;
                }
                int i = (int) Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1));
                return s[i] / 1e6;
            }
        }
    }

    record Options(long rows, int days, int threads, Duration baseline, Duration after, int batchSize,
            List<JdbcLayout> layouts, List<Double> dutyCycles, boolean expiryOrder, boolean keep) {
        static Options parse(String[] args) {
            long rows = 1_000_000;
            int days = 10;
            int threads = 4;
            Duration baseline = Duration.ofSeconds(20);
            Duration after = Duration.ofSeconds(10);
            int batchSize = 1_000;
            List<JdbcLayout> layouts = List.of(JdbcLayout.STANDARD, JdbcLayout.PARTITIONED_BY_EXPIRY_DAY);
            List<Double> dutyCycles = List.of(1.0);
            boolean expiryOrder = false;
            boolean keep = false;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--keep" -> keep = true;
                    case "--rows" -> rows = Long.parseLong(args[++i].replace("_", ""));
                    case "--days" -> days = Integer.parseInt(args[++i]);
                    case "--threads" -> threads = Integer.parseInt(args[++i]);
                    case "--baseline" -> baseline = seconds(args[++i]);
                    case "--after" -> after = seconds(args[++i]);
                    case "--batch-size" -> batchSize = Integer.parseInt(args[++i]);
                    case "--layouts" -> layouts = Arrays.stream(args[++i].split(",")).map(s -> switch (s.strip()) {
                        case "standard" -> JdbcLayout.STANDARD;
                        case "partitioned" -> JdbcLayout.PARTITIONED_BY_EXPIRY_DAY;
                        default -> throw new IllegalArgumentException("--layouts takes standard and/or partitioned, but was " + s);
                    }).toList();
                    case "--duty-cycle" -> dutyCycles = Arrays.stream(args[++i].split(","))
                            .map(s -> Double.parseDouble(s.strip())).toList();
                    case "--fill-order" -> expiryOrder = switch (args[++i]) {
                        case "scattered" -> false;
                        case "expiry" -> true;
                        default -> throw new IllegalArgumentException("--fill-order takes scattered or expiry, but was "
                                + args[i]);
                    };
                    default -> throw new IllegalArgumentException("unknown option " + a + "; options: --rows N --days N"
                            + " --threads N --baseline 20s --after 10s --batch-size N --layouts standard,partitioned"
                            + " --duty-cycle 1,0.5 --fill-order scattered|expiry --keep");
                }
            }
            if (rows < 1 || days < 1 || days > 365 || threads < 1 || batchSize < 1) {
                throw new IllegalArgumentException("--rows, --threads and --batch-size must be at least 1, --days 1 to 365");
            }
            for (double d : dutyCycles) {
                // Refused here rather than by the purger, after minutes of filling the table.
                if (!(d > 0 && d <= 1)) {
                    throw new IllegalArgumentException("--duty-cycle takes shares more than 0 and at most 1, but was " + d);
                }
            }
            return new Options(rows, days, threads, baseline, after, batchSize, layouts, dutyCycles, expiryOrder,
                    keep);
        }

        private static Duration seconds(String s) {
            return Duration.ofSeconds(Long.parseLong(s.endsWith("s") ? s.substring(0, s.length() - 1) : s));
        }
    }
}
