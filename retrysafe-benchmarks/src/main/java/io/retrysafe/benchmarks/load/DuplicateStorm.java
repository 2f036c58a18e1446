package io.retrysafe.benchmarks.load;

import io.retrysafe.IdempotencyKeys;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A duplicate storm: {@code --requests} requests with <em>one</em> {@code Idempotency-Key}, sent at
 * the same moment (each on its own thread and connection, released together by a latch), against
 * {@code POST /payments} of the payments service. Reports how long until every request was answered,
 * the latency of each (p50, p99, max), the status counts (exactly one first {@code 201}, the rest
 * replays or {@code 409}s), and how many distinct payments the {@code 2xx} bodies name (must be one).
 * {@code storm.sh} runs it against a fresh service and also counts the payments in the database.
 *
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.load.DuplicateStorm \
 *     --url http://127.0.0.1:8080/payments --user alice --password alice-secret \
 *     --requests 1000 --warmup-storms 2 --storms 5 --json storm.json
 * </pre>
 *
 * Each storm uses a new key (a UUIDv7); warmup storms are run and printed but left out of the
 * summary (a cold service may leave some of the first storm's requests unanswered within
 * {@code --timeout}). One line per storm on stderr, the summary line (over the measured storms) on
 * stdout. Only loopback targets are accepted. Exit status: 0 when every storm completed, whatever it
 * answered; 2 for bad arguments; 3 when a storm broke the guarantee (two first {@code 201}s, or two
 * payments named), so that a script notices.
 */
public final class DuplicateStorm {
    static final int DEFAULT_REQUESTS = 1000;
    static final int DEFAULT_STORMS = 3;
    static final int DEFAULT_WARMUP_STORMS = 1;
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
    static final String DEFAULT_BODY = "{\"account\":\"acc-1\",\"amount\":1}";
    private static final Pattern PAYMENT_ID = Pattern.compile("\"id\"\\s*:\\s*\"([0-9a-fA-F-]{36})\"");

    private DuplicateStorm() {
    }

    /** The parsed command line; every value checked. */
    record Options(URI url, String authorization, int requests, int storms, int warmupStorms, Duration timeout,
                   String body, Path json) {

        static final String USAGE = """
                usage: DuplicateStorm --url http://127.0.0.1:PORT/payments [options]
                  --user U --password P   HTTP Basic credentials
                  --requests N            concurrent requests per storm, one key (default 1000)
                  --storms N              measured storms, a new key each (default 3)
                  --warmup-storms N       storms before them, not in the summary (default 1)
                  --body JSON             request body (default {"account":"acc-1","amount":1})
                  --timeout D             per request (default 60s); a timeout counts as an error
                  --json FILE             also write the summary to FILE
                only loopback targets (127.0.0.1, localhost, ::1) are accepted""";

        static Options parse(String[] args) {
            Map<String, String> values = new LinkedHashMap<>();
            Set<String> known = Set.of("--url", "--user", "--password", "--requests", "--storms", "--warmup-storms",
                    "--body", "--timeout", "--json");
            for (int i = 0; i < args.length; i++) {
                String name = args[i];
                String value = null;
                int eq = name.indexOf('=');
                if (name.startsWith("--") && eq > 0) {
                    value = name.substring(eq + 1);
                    name = name.substring(0, eq);
                }
                if (!known.contains(name)) {
                    throw new IllegalArgumentException("unknown option " + name);
                }
                if (value == null) {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException(name + " needs a value");
                    }
                    value = args[++i];
                }
                if (values.putIfAbsent(name, value) != null) {
                    throw new IllegalArgumentException(name + " was given twice: " + values.get(name) + " and " + value);
                }
            }
            if (!values.containsKey("--url")) {
                throw new IllegalArgumentException("--url is required");
            }
            URI uri = HttpLoad.loopbackUrl(values.get("--url"));
            String user = values.get("--user");
            String password = values.get("--password");
            if ((user == null) != (password == null)) {
                throw new IllegalArgumentException("--user and --password go together, but only "
                        + (user == null ? "--password" : "--user") + " was given");
            }
            String authorization = user == null ? null : "Basic " + Base64.getEncoder()
                    .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
            int requests = count("--requests", values.get("--requests"), DEFAULT_REQUESTS, 1, 10_000);
            int storms = count("--storms", values.get("--storms"), DEFAULT_STORMS, 1, 1_000);
            int warmupStorms = count("--warmup-storms", values.get("--warmup-storms"), DEFAULT_WARMUP_STORMS, 0, 1_000);
            Duration timeout = HttpLoad.parseDuration("--timeout", values.get("--timeout"), DEFAULT_TIMEOUT);
            if (timeout.isZero()) {
                throw new IllegalArgumentException("--timeout must be positive, but was " + values.get("--timeout"));
            }
            String body = values.getOrDefault("--body", DEFAULT_BODY);
            Path json = values.containsKey("--json") ? Path.of(values.get("--json")) : null;
            return new Options(uri, authorization, requests, storms, warmupStorms, timeout, body, json);
        }

        private static int count(String name, String value, int defaultValue, int min, int max) {
            if (value == null) {
                return defaultValue;
            }
            int n;
            try {
                n = Integer.parseInt(value.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + " must be a whole number, but was " + value);
            }
            if (n < min || n > max) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", but was " + n);
            }
            return n;
        }
    }

    /** One storm's answers. */
    record Storm(int index, boolean warmup, String key, long allAnsweredNanos, long[] latencies,
                 Map<Integer, Long> statuses, long replayed, long firstCreated, long errors,
                 Map<String, Long> errorKinds, Set<String> paymentIds) {

        /**
         * The guarantee, as far as the answers show it: broken when two requests both ran (two first
         * {@code 201}s) or the {@code 2xx} bodies name two payments; unverified when no first {@code 201}
         * was seen because some requests got no answer (the one that ran may be among them: count the
         * payments in the database, as {@code storm.sh} does); held otherwise.
         */
        String guarantee() {
            if (firstCreated > 1 || paymentIds.size() > 1) {
                return "broken";
            }
            return firstCreated == 1 && paymentIds.size() == 1 ? "held" : "unverified";
        }

        String line() {
            return String.format(Locale.ROOT, "storm=%d%s requests=%d all-answered=%.1f ms p50=%.1f p99=%.1f"
                            + " max=%.1f ms statuses=%s replayed=%d first-201=%d payments-named=%d errors=%d%s"
                            + " guarantee=%s",
                    index, warmup ? " (warmup)" : "", latencies.length + errors, allAnsweredNanos / 1e6,
                    percentile(latencies, 50), percentile(latencies, 99), percentile(latencies, 100),
                    statusText(statuses), replayed, firstCreated, paymentIds.size(), errors,
                    errorKinds.isEmpty() ? "" : " " + errorKinds, guarantee());
        }
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("DuplicateStorm: " + e.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        List<Storm> measured = new ArrayList<>();
        boolean broken = false;
        int total = options.warmupStorms() + options.storms();
        for (int i = 1; i <= total; i++) {
            Storm storm = storm(client, options, i, i <= options.warmupStorms());
            System.err.println("DuplicateStorm: " + storm.line());
            broken |= storm.guarantee().equals("broken");
            if (!storm.warmup()) {
                measured.add(storm);
            }
        }
        System.out.println(summaryLine(options, measured));
        if (options.json() != null) {
            Files.writeString(options.json(), json(options, measured), StandardCharsets.UTF_8);
        }
        if (broken) {
            System.exit(3);
        }
    }

    static Storm storm(HttpClient client, Options options, int index, boolean warmup) throws InterruptedException {
        String key = IdempotencyKeys.uuidV7();
        HttpRequest.Builder builder = HttpRequest.newBuilder(options.url())
                .timeout(options.timeout())
                .header("Content-Type", "application/json")
                .header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(options.body()));
        if (options.authorization() != null) {
            builder.header("Authorization", options.authorization());
        }
        HttpRequest request = builder.build();
        int n = options.requests();
        long[] ends = new long[n];
        int[] statuses = new int[n];
        boolean[] replayed = new boolean[n];
        String[] bodies = new String[n];
        String[] errors = new String[n];
        CountDownLatch ready = new CountDownLatch(n);
        CountDownLatch go = new CountDownLatch(1);
        Thread[] threads = new Thread[n];
        for (int t = 0; t < n; t++) {
            int slot = t;
            threads[t] = new Thread(() -> {
                ready.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    HttpResponse<String> response = client.send(request, HttpResponse.BodyHandlers.ofString());
                    ends[slot] = System.nanoTime();
                    statuses[slot] = response.statusCode();
                    replayed[slot] = response.headers().firstValue(HttpLoad.REPLAYED_HEADER)
                            .map("true"::equalsIgnoreCase).orElse(false);
                    bodies[slot] = response.body();
                } catch (HttpTimeoutException e) {
                    ends[slot] = System.nanoTime();
                    errors[slot] = "timeout";
                } catch (IOException e) {
                    ends[slot] = System.nanoTime();
                    errors[slot] = e.getClass().getSimpleName();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "storm-" + index + "-" + t);
            threads[t].setDaemon(true);
            threads[t].start();
        }
        ready.await();
        long start = System.nanoTime();
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        // Each request's latency is from the common start: all were released at that moment.
        List<Long> latencies = new ArrayList<>(n);
        Map<Integer, Long> statusCounts = new TreeMap<>();
        Map<String, Long> errorKinds = new TreeMap<>();
        Set<String> paymentIds = new TreeSet<>();
        long replays = 0;
        long firstCreated = 0;
        long errorCount = 0;
        long last = start;
        for (int t = 0; t < n; t++) {
            last = Math.max(last, ends[t]);
            if (errors[t] != null) {
                errorCount++;
                errorKinds.merge(errors[t], 1L, Long::sum);
                continue;
            }
            latencies.add(ends[t] - start);
            statusCounts.merge(statuses[t], 1L, Long::sum);
            if (replayed[t]) {
                replays++;
            } else if (statuses[t] == 201) {
                firstCreated++;
            }
            if (statuses[t] / 100 == 2) {
                Matcher m = PAYMENT_ID.matcher(bodies[t]);
                paymentIds.add(m.find() ? m.group(1) : "(no id in: " + bodies[t] + ")");
            }
        }
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        return new Storm(index, warmup, key, last - start, sorted, statusCounts, replays, firstCreated, errorCount,
                errorKinds, paymentIds);
    }

    /** The {@code p}-th percentile in milliseconds (nearest rank); NaN for no values. */
    static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))] / 1e6;
    }

    private static String statusText(Map<Integer, Long> statuses) {
        if (statuses.isEmpty()) {
            return "none";
        }
        StringBuilder s = new StringBuilder();
        statuses.forEach((status, count) -> s.append(s.length() == 0 ? "" : ",").append(status).append(':')
                .append(count));
        return s.toString();
    }

    /** Over the measured storms: the median storm's all-answered time, and percentiles over all their requests. */
    static String summaryLine(Options options, List<Storm> storms) {
        double[] answered = storms.stream().mapToDouble(s -> s.allAnsweredNanos() / 1e6).sorted().toArray();
        long[] all = storms.stream().flatMapToLong(s -> Arrays.stream(s.latencies())).sorted().toArray();
        Map<Integer, Long> statuses = new TreeMap<>();
        storms.forEach(s -> s.statuses().forEach((k, v) -> statuses.merge(k, v, Long::sum)));
        long errors = storms.stream().mapToLong(Storm::errors).sum();
        long held = storms.stream().filter(s -> s.guarantee().equals("held")).count();
        long broken = storms.stream().filter(s -> s.guarantee().equals("broken")).count();
        return String.format(Locale.ROOT, "storms=%d requests=%d all-answered-median=%.1f all-answered-max=%.1f"
                        + " p50=%.1f p99=%.1f max=%.1f ms statuses=%s errors=%d held=%d/%d broken=%d",
                storms.size(), options.requests(), answered.length == 0 ? Double.NaN : answered[answered.length / 2],
                answered.length == 0 ? Double.NaN : answered[answered.length - 1], percentile(all, 50),
                percentile(all, 99), percentile(all, 100), statusText(statuses), errors, held, storms.size(), broken);
    }

    static String json(Options options, List<Storm> storms) {
        StringBuilder s = new StringBuilder("{\"url\":\"").append(options.url()).append("\",\"requests\":")
                .append(options.requests()).append(",\"storms\":[");
        for (int i = 0; i < storms.size(); i++) {
            Storm st = storms.get(i);
            s.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT,
                    "{\"allAnsweredMs\":%.3f,\"p50Ms\":%.3f,\"p99Ms\":%.3f,\"maxMs\":%.3f,\"replayed\":%d,"
                            + "\"first201\":%d,\"paymentsNamed\":%d,\"errors\":%d,\"guarantee\":\"%s\",\"statuses\":{",
                    st.allAnsweredNanos() / 1e6, percentile(st.latencies(), 50), percentile(st.latencies(), 99),
                    percentile(st.latencies(), 100), st.replayed(), st.firstCreated(), st.paymentIds().size(),
                    st.errors(), st.guarantee()));
            boolean first = true;
            for (Map.Entry<Integer, Long> e : st.statuses().entrySet()) {
                s.append(first ? "" : ",").append('"').append(e.getKey()).append("\":").append(e.getValue());
                first = false;
            }
            s.append("}}");
        }
        return s.append("]}\n").toString();
    }
}
