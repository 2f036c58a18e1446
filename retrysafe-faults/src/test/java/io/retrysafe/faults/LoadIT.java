package io.retrysafe.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.faults.PaymentClient.Answer;
import io.retrysafe.faults.PaymentClient.Intent;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Steady load on the payments service, 10% of requests retries of an earlier intent (replays) and
 * 1% duplicates in flight, sampled per window: the service's live heap after a full GC
 * ({@code jcmd GC.class_histogram}), its live threads, Hikari's active and idle connections, the
 * server's client backends ({@code pg_stat_activity}), and latency p50/p99 at the client. A leak
 * or drift check, not a performance assertion: each value must stay within generous bounds of
 * where it was early in the run (the bounds are in docs/faults.md and {@link #flat}).
 *
 * <p>{@code -Dretrysafe.load.duration} and {@code -Dretrysafe.load.window} set the run (5 min in
 * windows of 30 s by default; the {@code soak} profile: 1 h in windows of 2 min). The first window is
 * warm-up and not compared.
 */
class LoadIT {
    private static final int WORKERS = 8;
    /** The offered load, requests per second over all workers; a slower service makes it a closed loop. */
    private static final int RATE = 120;
    private static final double RETRY_RATE = 0.10;
    private static final double DUPLICATE_RATE = 0.01;
    private static final int POOL = 10;
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    private static final Pattern PROM_LINE = Pattern.compile("^([a-z_]+)\\{([^}]*)\\} ([0-9.eE+-]+)$");

    @TempDir
    Path dir;

    /** One window's samples. */
    record Window(int index, long requests, long unexpected, double p50, double p99, long heapLive, long threads,
            long hikariActive, long hikariIdle, long pgBackends, long hikariTotal) {
    }

    @Test
    void memoryConnectionsAndLatencyStayFlatUnderSteadyLoad() throws Exception {
        Duration duration = Duration.parse(FaultInjectionIT.property("retrysafe.load.duration", "PT5M"));
        Duration window = Duration.parse(FaultInjectionIT.property("retrysafe.load.window", "PT30S"));
        int windows = (int) Math.max(4, duration.toMillis() / window.toMillis());
        System.out.println("[load] " + windows + " windows of " + window + ", " + WORKERS + " workers, " + RATE
                + " requests/s offered, " + (int) (RETRY_RATE * 100) + "% retries, " + (int) (DUPLICATE_RATE * 100)
                + "% duplicates in flight");

        List<Window> table = new ArrayList<>();
        List<String> unexpected = new ArrayList<>();
        try (SuitePostgres pg = SuitePostgres.start(dir);
                ServiceNode service = new ServiceNode(dir, SuitePostgres.freePort(), List.of(
                        "--spring.datasource.url=" + pg.jdbcUrl(), "--spring.datasource.username=postgres",
                        "--spring.datasource.password=", "--spring.datasource.hikari.maximum-pool-size=" + POOL))) {
            service.start();
            String account = "load-0";
            try (Connection c = pg.connect(); PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO account (id, label, balance) VALUES (?, 'Load', 900000000000000)")) {
                ps.setString(1, account);
                ps.executeUpdate();
            }
            Load load = new Load(new PaymentClient(service.port(), REQUEST_TIMEOUT), account);
            load.start();
            try (Connection db = pg.connect()) {
                for (int i = 0; i < windows; i++) {
                    Thread.sleep(window.toMillis()); // the window itself
                    List<Answer> answers = load.drain();
                    table.add(sample(i, answers, load, service, db));
                    System.out.println("[load] " + row(table.get(table.size() - 1)));
                }
            } finally {
                load.stop();
            }
            unexpected.addAll(load.unexpected);
        }
        System.out.println("\n[load] ---- per window ----\n[load] " + header());
        table.forEach(w -> System.out.println("[load] " + row(w)));
        List<String> drift = flat(table.subList(1, table.size()));
        System.out.println("[load] unexpected answers: " + unexpected.size() + ", drift: " + drift.size());
        drift.forEach(d -> System.out.println("[load]   " + d));
        unexpected.stream().limit(20).forEach(u -> System.out.println("[load]   " + u));

        assertThat(unexpected).as("answers other than 201, a replay of the first answer, or 409 for a duplicate")
                .isEmpty();
        assertThat(drift).as("values that did not stay flat").isEmpty();
    }

    /**
     * Flat: every window stays within the pool (Hikari's connections ≤ pool size; the server's client
     * backends ≤ pool size + this test's own connection), and the median of the last third of the
     * windows stays within generous bounds of the median of the first third: live heap ≤ 1.5 × + 32 MiB,
     * live threads ≤ + 16, p50 ≤ 3 × + 20 ms, p99 ≤ 3 × + 250 ms. Medians of thirds, so that one window
     * slowed by another build on the machine does not count as drift.
     */
    static List<String> flat(List<Window> measured) {
        List<String> drift = new ArrayList<>();
        for (Window w : measured) {
            // Hikari's own total: active and idle are read one after the other, and a connection moving
            // between them in that moment is counted in both.
            long held = w.hikariTotal() >= 0 ? w.hikariTotal() : w.hikariActive() + w.hikariIdle();
            if (held > POOL) {
                drift.add("window " + w.index() + ": Hikari holds " + held
                        + " connections, over the pool's " + POOL);
            }
            if (w.pgBackends() > POOL + 1) {
                drift.add("window " + w.index() + ": " + w.pgBackends() + " client backends, over the pool's " + POOL
                        + " + 1");
            }
        }
        int third = Math.max(1, measured.size() / 3);
        List<Window> early = measured.subList(0, third);
        List<Window> late = measured.subList(measured.size() - third, measured.size());
        bound(drift, "live heap (bytes)", early, late, Window::heapLive, 1.5, 32.0 * 1024 * 1024);
        bound(drift, "live threads", early, late, Window::threads, 1.0, 16);
        bound(drift, "p50 (ms)", early, late, Window::p50, 3.0, 20);
        bound(drift, "p99 (ms)", early, late, Window::p99, 3.0, 250);
        return drift;
    }

    private static void bound(List<String> drift, String what, List<Window> early, List<Window> late,
            java.util.function.ToDoubleFunction<Window> value, double factor, double plus) {
        double e = median(early.stream().mapToDouble(value).toArray());
        double l = median(late.stream().mapToDouble(value).toArray());
        if (l > e * factor + plus) {
            drift.add(String.format("%s grew from %.1f (median of the first windows) to %.1f (of the last),"
                    + " over the bound %.1f × + %.0f", what, e, l, factor, plus));
        }
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)];
    }

    private Window sample(int index, List<Answer> answers, Load load, ServiceNode service, Connection db)
            throws Exception {
        double[] millis = answers.stream().mapToDouble(a -> a.nanos() / 1e6).sorted().toArray();
        long heap = heapLiveAfterGc(service.pid());
        Map<String, Double> metrics = prometheus(service.port());
        long backends;
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")) {
            rs.next();
            backends = rs.getLong(1);
        }
        return new Window(index, answers.size(), load.unexpectedCount.getAndSet(0), percentile(millis, 0.50),
                percentile(millis, 0.99), heap, metrics.getOrDefault("jvm_threads_live_threads", -1.0).longValue(),
                metrics.getOrDefault("hikaricp_connections_active", -1.0).longValue(),
                metrics.getOrDefault("hikaricp_connections_idle", -1.0).longValue(), backends,
                metrics.getOrDefault("hikaricp_connections", -1.0).longValue());
    }

    /** Bytes of live objects: {@code GC.class_histogram} runs a full GC first, then counts what survived. */
    private static long heapLiveAfterGc(long pid) throws IOException, InterruptedException {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.class_histogram")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new AssertionError("jcmd GC.class_histogram failed:\n" + out);
        }
        for (String line : out.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && f[0].equals("Total")) {
                return Long.parseLong(f[2]);
            }
        }
        throw new AssertionError("no Total line in jcmd's histogram:\n"
                + out.substring(0, Math.min(2000, out.length())));
    }

    /** The samples of {@code /actuator/prometheus} by metric name (labels dropped; one pool, one service). */
    private static Map<String, Double> prometheus(int port) throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/prometheus")).timeout(Duration.ofSeconds(30))
                .build(), HttpResponse.BodyHandlers.ofString());
        Map<String, Double> values = new LinkedHashMap<>();
        for (String line : r.body().split("\n")) {
            Matcher m = PROM_LINE.matcher(line);
            if (m.matches()) {
                values.merge(m.group(1), Double.parseDouble(m.group(3)), Double::sum);
            } else if (!line.startsWith("#") && line.indexOf(' ') > 0 && !line.contains("{")) {
                String[] f = line.split(" ");
                values.merge(f[0], Double.parseDouble(f[1]), Double::sum);
            }
        }
        return values;
    }

    static String header() {
        return String.format("%6s %8s %6s %8s %8s %10s %7s %13s %8s", "window", "requests", "unexp", "p50 ms",
                "p99 ms", "heap MiB", "threads", "hikari act/id", "pg conns");
    }

    static String row(Window w) {
        return String.format("%6d %8d %6d %8.1f %8.1f %10.1f %7d %13s %8d", w.index(), w.requests(), w.unexpected(),
                w.p50(), w.p99(), w.heapLive() / 1024.0 / 1024.0, w.threads(), w.hikariActive() + "/" + w.hikariIdle(),
                w.pgBackends());
    }

    /** The workers: paced new intents, some retried, some duplicated in flight; every answer checked as it comes. */
    private static final class Load {
        private final PaymentClient client;
        private final String account;
        private final ConcurrentLinkedQueue<Answer> answers = new ConcurrentLinkedQueue<>();
        /** Recent intents and their first answers, for retries. */
        private final AtomicReferenceArray<Object[]> recent = new AtomicReferenceArray<>(4096);
        private final AtomicLong amounts = new AtomicLong();
        final List<String> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
        final AtomicLong unexpectedCount = new AtomicLong();
        private final List<Thread> threads = new ArrayList<>();
        private volatile boolean stopped;

        Load(PaymentClient client, String account) {
            this.client = client;
            this.account = account;
        }

        void start() {
            for (int i = 0; i < WORKERS; i++) {
                int n = i;
                Thread t = new Thread(() -> run(n), "load-" + i);
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
        }

        void stop() throws InterruptedException {
            stopped = true;
            for (Thread t : threads) {
                t.join(REQUEST_TIMEOUT.toMillis() * 2);
            }
        }

        List<Answer> drain() {
            List<Answer> out = new ArrayList<>();
            for (Answer a; (a = answers.poll()) != null; ) {
                out.add(a);
            }
            return out;
        }

        private void run(int n) {
            Random random = new Random(n);
            long periodNanos = 1_000_000_000L * WORKERS / RATE;
            long next = System.nanoTime();
            try {
                while (!stopped) {
                    next += periodNanos;
                    double dice = random.nextDouble();
                    Object[] old = recent.get(random.nextInt(recent.length()));
                    if (dice < RETRY_RATE && old != null) {
                        Intent intent = (Intent) old[0];
                        check(intent, client.send(intent, 2), (String) old[1], false);
                    } else {
                        Intent intent = new Intent(UUID.randomUUID().toString(), n % 2 == 0 ? "alice" : "bob",
                                account, amounts.incrementAndGet());
                        CompletableFuture<Answer> duplicate = dice > 1 - DUPLICATE_RATE
                                ? client.sendAsync(intent, 0) : null;
                        String first = check(intent, client.send(intent, 1), null, duplicate != null);
                        if (duplicate != null) {
                            String other = check(intent, duplicate.get(REQUEST_TIMEOUT.toSeconds() + 5,
                                    TimeUnit.SECONDS), first, true);
                            first = first == null ? other : first;
                        }
                        if (first != null) {
                            recent.set(random.nextInt(recent.length()), new Object[] {intent, first});
                        }
                    }
                    long wait = next - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait); // pacing
                    } else {
                        next = System.nanoTime(); // behind: no burst to catch up
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                unexpected.add("worker " + n + " failed: " + e);
            }
        }

        /**
         * Counts an answer that is neither a 201 equal to {@code expected} (when given) nor a 409 of a
         * duplicated pair; returns the answer when it is a 201, else null.
         */
        private String check(Intent intent, Answer a, String expected, boolean duplicated) {
            answers.add(a);
            if (a.status() == 409 && duplicated) {
                return null; // the other one of the pair was in flight
            }
            String answer = a.status() + " " + a.body();
            if (a.status() != 201 || (expected != null && !expected.equals(answer))) {
                unexpectedCount.incrementAndGet();
                unexpected.add(intent.key() + ": " + (a.failed() ? a.failure() : answer)
                        + (expected != null ? " (first answer: " + expected + ")" : ""));
                return null;
            }
            return answer;
        }
    }
}
