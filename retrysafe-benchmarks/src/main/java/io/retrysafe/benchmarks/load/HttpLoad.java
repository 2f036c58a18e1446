package io.retrysafe.benchmarks.load;

import io.retrysafe.IdempotencyKeys;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * An HTTP load generator for the payments service, closed or open loop, for {@code --warmup} and then
 * {@code --duration}; it stops by itself.
 *
 * <p>Closed loop (the default): each of {@code --threads} threads sends a request, waits for the
 * answer, and sends the next one. The latency of every request <em>started</em> after the warmup and
 * before the end is recorded. A closed loop slows down with the service, so its percentiles hide the
 * queueing a real client would see (coordinated omission): use it for throughput. A thread that waited
 * the whole window for the answer to a request sent before it sent nothing in it; the log says how many
 * did, since their wait is in no percentile.
 *
 * <p>Open loop ({@code --rate R}): requests are due at a fixed rate of {@code R} per second in all,
 * spread evenly over the threads (thread {@code t} of {@code n} is due at {@code t/R}, then every
 * {@code n/R} seconds). A thread that is late sends at once, and every latency is counted from the
 * time the request was <em>due</em>, not from when it could be sent, so a stall shows in the
 * percentiles as the wait it caused every request behind it. Give it enough threads that the rate
 * fits ({@code threads} &ge; rate &times; latency); {@code late} counts requests sent more than one
 * interval after they were due. Use it for latency at a given load.
 *
 * <p>When the service cannot keep up, the open loop says so instead of hiding it. Every request due in
 * the measured window is counted: a thread that fell behind goes on sending the requests due before
 * the end, each late, for at most {@code --timeout} after the end (the drain); the requests it has not
 * sent by then are counted as {@code unsent} and recorded with the wait they had reached, a lower bound
 * of their latency. {@code achieved} is the answers received during the measured window per second
 * (what the service delivered; {@code rps} is the requests measured per second, in the open loop the
 * rate they were due at), and {@code overrun} how long after the window the last measured request was
 * answered or given up. A run with late or unsent requests, or answers short of 90 % of the rate, ends
 * with a line on the log that says the service did not keep up.
 *
 * <p>Latencies ({@link System#nanoTime()}) are recorded in a per-thread HdrHistogram (3 significant
 * digits, up to 10 minutes) and merged at the end.
 *
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.load.HttpLoad \
 *     --url http://127.0.0.1:8080/payments --user alice --password alice-secret \
 *     --mode new-key --threads 8 --warmup 10s --duration 30s --json result.json
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.load.HttpLoad \
 *     --url http://127.0.0.1:8080/payments --user alice --password alice-secret \
 *     --mode new-key --threads 32 --rate 400 --warmup 10s --duration 30s
 * </pre>
 *
 * Modes:
 * <ul>
 * <li>{@code new-key}: a fresh UUIDv7 {@code Idempotency-Key} per request ({@link IdempotencyKeys#uuidV7()},
 *     made before the request's clock starts), so every request runs;
 * <li>{@code replay}: one key (or {@code --keys N}); one request with each is sent and must succeed
 *     before the load starts, then every request reuses one of them (thread {@code t} goes round the
 *     keys from key {@code t}), so every request is answered from the store. One key measures replays
 *     that queue behind each other on the key's record; many keys, replays that do not;
 * <li>{@code no-key}: no {@code Idempotency-Key} header (the service with RetrySafe switched off).
 * </ul>
 *
 * The body is {@code --body} with {@code {account}} replaced by an account of {@code --accounts}:
 * thread {@code t} uses account {@code t mod n}, so that with several accounts the threads do not all
 * wait for one account row. {@code replay} sends the first account only (the stored request's
 * fingerprint covers the account). Only loopback targets are accepted.
 *
 * <p>Output: one line (mode, threads, target rate, requests, rps, achieved rps, p50, p90, p99, p99.9, max in
 * ms, late and unsent requests, overrun in seconds, status counts), and with
 * {@code --json FILE} the same numbers as JSON. The exit status is 0 when the run completed, whatever
 * the statuses; 2 for bad arguments; 1 when the replay's first request failed.
 */
public final class HttpLoad {
    static final String DEFAULT_BODY = "{\"account\":\"{account}\",\"amount\":1}";
    static final List<String> DEFAULT_ACCOUNTS = List.of("acc-1", "acc-2");
    static final int DEFAULT_THREADS = 8;
    static final Duration DEFAULT_DURATION = Duration.ofSeconds(30);
    static final Duration DEFAULT_WARMUP = Duration.ofSeconds(10);
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    static final String ACCOUNT_PLACEHOLDER = "{account}";
    static final String REPLAYED_HEADER = "Idempotent-Replayed";

    /** Hosts a load may be sent to: this machine only. */
    static final Set<String> LOOPBACK_HOSTS = Set.of("127.0.0.1", "localhost", "[::1]", "::1");

    /** The largest latency a histogram holds; a longer one is recorded as this. */
    static final long HIGHEST_TRACKABLE_NANOS = TimeUnit.MINUTES.toNanos(10);

    /** Open loop: answers short of this share of the rate say that the service did not keep up. */
    static final double KEEPING_UP = 0.9;

    private HttpLoad() {
    }

    /** What a request carries. */
    enum Mode {
        NEW_KEY("new-key"), REPLAY("replay"), NO_KEY("no-key");

        final String label;

        Mode(String label) {
            this.label = label;
        }

        static Mode parse(String value) {
            for (Mode m : values()) {
                if (m.label.equals(value)) {
                    return m;
                }
            }
            throw new IllegalArgumentException("--mode must be new-key, replay or no-key, but was " + value);
        }
    }

    /** The parsed command line; every value checked. */
    record Options(URI url, String authorization, String caller, int threads, Duration duration, Duration warmup,
                   Duration timeout, Mode mode, String body, List<String> accounts, int keys, double rate, Path json) {

        static final String USAGE = """
                usage: HttpLoad --url http://127.0.0.1:PORT/payments [options]
                  --user U --password P   HTTP Basic credentials
                  --caller C              X-RetrySafe-Caller: C, the header the gateway sets once it has checked
                                          the credentials: for a service reached without the gateway in front
                  --threads N             threads, each with its own connection (default 8)
                  --rate R                open loop: R requests per second in all, latency from each
                                          request's due time (default: closed loop); requests due in
                                          the window and not sent within --timeout after it are unsent
                  --warmup D              not recorded (default 10s); D: 500ms, 10s, 2m, PT10S
                  --duration D            recorded, after the warmup (default 30s)
                  --mode M                new-key (default) | replay | no-key
                  --body JSON             request body; {account} is replaced (default {"account":"{account}","amount":1})
                  --accounts A,B          accounts substituted for {account}, thread t uses A[t mod n] (default acc-1,acc-2)
                  --keys N                replay: keys replayed, each stored by one request first (default 1)
                  --timeout D             per request (default 10s); a timeout counts as an error
                  --json FILE             also write the numbers to FILE
                only loopback targets (127.0.0.1, localhost, ::1) are accepted""";

        static Options parse(String[] args) {
            Map<String, String> values = new LinkedHashMap<>();
            Set<String> known = Set.of("--url", "--user", "--password", "--caller", "--threads", "--duration", "--warmup",
                    "--mode", "--body", "--accounts", "--keys", "--timeout", "--rate", "--json");
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
            String url = values.get("--url");
            if (url == null) {
                throw new IllegalArgumentException("--url is required");
            }
            URI uri = loopbackUrl(url);
            String user = values.get("--user");
            String password = values.get("--password");
            if ((user == null) != (password == null)) {
                throw new IllegalArgumentException("--user and --password go together, but only "
                        + (user == null ? "--password" : "--user") + " was given");
            }
            String authorization = user == null ? null : "Basic " + Base64.getEncoder()
                    .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
            int threads = parseThreads(values.getOrDefault("--threads", String.valueOf(DEFAULT_THREADS)));
            Duration duration = parseDuration("--duration", values.get("--duration"), DEFAULT_DURATION);
            if (duration.isZero()) {
                throw new IllegalArgumentException("--duration must be positive, but was " + values.get("--duration"));
            }
            Duration warmup = parseDuration("--warmup", values.get("--warmup"), DEFAULT_WARMUP);
            Duration timeout = parseDuration("--timeout", values.get("--timeout"), DEFAULT_TIMEOUT);
            if (timeout.isZero()) {
                throw new IllegalArgumentException("--timeout must be positive, but was " + values.get("--timeout"));
            }
            Mode mode = Mode.parse(values.getOrDefault("--mode", Mode.NEW_KEY.label));
            String body = values.getOrDefault("--body", DEFAULT_BODY);
            List<String> accounts = DEFAULT_ACCOUNTS;
            if (values.containsKey("--accounts")) {
                accounts = new ArrayList<>();
                for (String a : values.get("--accounts").split(",", -1)) {
                    if (a.isBlank()) {
                        throw new IllegalArgumentException("--accounts must be a comma-separated list of account ids,"
                                + " but was " + values.get("--accounts"));
                    }
                    accounts.add(a.strip());
                }
                accounts = List.copyOf(accounts);
                if (!body.contains(ACCOUNT_PLACEHOLDER)) {
                    throw new IllegalArgumentException("--accounts needs " + ACCOUNT_PLACEHOLDER
                            + " in --body, but the body was " + body);
                }
            }
            int keys = 1;
            if (values.containsKey("--keys")) {
                if (mode != Mode.REPLAY) {
                    throw new IllegalArgumentException("--keys goes with --mode replay, but the mode was " + mode.label);
                }
                try {
                    keys = Integer.parseInt(values.get("--keys").strip());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--keys must be a whole number, but was " + values.get("--keys"));
                }
                if (keys < 1 || keys > 100_000) {
                    throw new IllegalArgumentException("--keys must be between 1 and 100000, but was " + keys);
                }
            }
            double rate = 0;
            if (values.containsKey("--rate")) {
                try {
                    rate = Double.parseDouble(values.get("--rate").strip());
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("--rate must be a number of requests per second, but was "
                            + values.get("--rate"));
                }
                if (!(rate > 0) || rate > 1_000_000) {
                    throw new IllegalArgumentException("--rate must be above 0 and at most 1000000, but was "
                            + values.get("--rate"));
                }
            }
            Path json = values.containsKey("--json") ? Path.of(values.get("--json")) : null;
            return new Options(uri, authorization, values.get("--caller"), threads, duration, warmup, timeout, mode, body,
                    accounts, keys, rate, json);
        }

        boolean isOpenLoop() {
            return rate > 0;
        }

        /** Open loop: nanoseconds between two requests of one thread. */
        long intervalNanos() {
            return Math.round(threads * 1e9 / rate);
        }

        /** The body thread {@code t} sends; {@code replay} always sends the first account's. */
        String bodyFor(int thread) {
            int index = mode == Mode.REPLAY ? 0 : thread % accounts.size();
            return body.replace(ACCOUNT_PLACEHOLDER, accounts.get(index));
        }
    }

    /** Refuses anything but http(s) on 127.0.0.1, localhost or ::1: this tool is not for other people's servers. */
    static URI loopbackUrl(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("--url is not a URL: " + url + " (" + e.getMessage() + ")");
        }
        String scheme = uri.getScheme();
        if (scheme == null || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))) {
            throw new IllegalArgumentException("--url must be http:// or https://, but was " + url);
        }
        String host = uri.getHost();
        if (host == null || !LOOPBACK_HOSTS.contains(host.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("refusing --url " + url + ": HttpLoad only sends load to this machine"
                    + " (host 127.0.0.1, localhost or ::1), but the host was " + host);
        }
        return uri;
    }

    static int parseThreads(String value) {
        int threads;
        try {
            threads = Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--threads must be a whole number, but was " + value);
        }
        if (threads < 1 || threads > 1024) {
            throw new IllegalArgumentException("--threads must be between 1 and 1024, but was " + threads);
        }
        return threads;
    }

    /** {@code 500ms}, {@code 10s}, {@code 2m}, a plain number of seconds, or ISO-8601 ({@code PT10S}). */
    static Duration parseDuration(String name, String value, Duration defaultValue) {
        if (value == null) {
            return defaultValue;
        }
        String v = value.strip().toLowerCase(Locale.ROOT);
        Duration d;
        try {
            if (v.startsWith("p")) {
                d = Duration.parse(v.toUpperCase(Locale.ROOT));
            } else if (v.endsWith("ms")) {
                d = Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            } else if (v.endsWith("s")) {
                d = Duration.ofSeconds(Long.parseLong(v.substring(0, v.length() - 1)));
            } else if (v.endsWith("m")) {
                d = Duration.ofMinutes(Long.parseLong(v.substring(0, v.length() - 1)));
            } else {
                d = Duration.ofSeconds(Long.parseLong(v));
            }
        } catch (NumberFormatException | DateTimeParseException e) {
            throw new IllegalArgumentException(name + " must be a duration such as 500ms, 10s, 2m or PT10S, but was "
                    + value);
        }
        if (d.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative, but was " + value);
        }
        return d;
    }

    /** One thread's record: latencies of the measured window, status counts, errors. */
    static final class Recorder {
        final Histogram latencies = new Histogram(HIGHEST_TRACKABLE_NANOS, 3);
        final long[] statuses = new long[600];
        long replayed;
        long errors;
        /** Open loop: requests sent more than one interval after they were due. */
        long late;
        /** Open loop: requests due in the measured window and still not sent when the drain ended. */
        long unsent;
        /** Answers (any status) received during the measured window, whenever their request was due. */
        long answeredInWindow;
        /** Nanoseconds from the end of the window until this thread's last measured request finished. */
        long overrun;
        /** Requests this thread sent (or, open loop, had due) in the measured window. */
        long sentInWindow;
        final Map<String, Long> errorKinds = new TreeMap<>();
        /** The first body of each status other than 2xx, to show why. */
        final Map<Integer, String> samples = new TreeMap<>();

        void record(long nanos) {
            latencies.recordValue(Math.min(Math.max(0, nanos), HIGHEST_TRACKABLE_NANOS));
        }

        /** A measured request finished (answered, failed or given up) at {@code nanoTime}. */
        void finished(long nanoTime, long end) {
            overrun = Math.max(overrun, nanoTime - end);
        }
    }

    /** The numbers of one run. */
    record Result(Mode mode, int threads, double targetRps, Duration warmup, Duration duration, long requests,
                  double rps, double achievedRps, double p50Ms, double p90Ms, double p99Ms, double p999Ms,
                  double maxMs, long late, long unsent, double overrunSeconds, Map<Integer, Long> statuses,
                  long replayed, long errors, Map<String, Long> errorKinds) {

        String line() {
            StringBuilder s = new StringBuilder();
            s.append(String.format(Locale.ROOT,
                    "mode=%s threads=%d rate=%s requests=%d rps=%.1f achieved=%.1f p50=%.3f p90=%.3f p99=%.3f"
                            + " p99.9=%.3f max=%.3f ms late=%d unsent=%d overrun=%.3f s statuses=",
                    mode.label, threads, targetRps > 0 ? String.format(Locale.ROOT, "%.1f", targetRps) : "closed",
                    requests, rps, achievedRps, p50Ms, p90Ms, p99Ms, p999Ms, maxMs, late, unsent, overrunSeconds));
            s.append(statusText());
            s.append(" replayed=").append(replayed).append(" errors=").append(errors);
            if (!errorKinds.isEmpty()) {
                s.append(' ').append(errorKinds);
            }
            return s.toString();
        }

        private String statusText() {
            if (statuses.isEmpty()) {
                return "none";
            }
            StringBuilder s = new StringBuilder();
            statuses.forEach((status, n) -> s.append(s.length() == 0 ? "" : ",").append(status).append(':').append(n));
            return s.toString();
        }

        String json(URI url) {
            StringBuilder s = new StringBuilder("{");
            s.append("\"url\":").append(quote(url.toString()));
            s.append(",\"mode\":").append(quote(mode.label));
            s.append(",\"threads\":").append(threads);
            s.append(",\"targetRps\":").append(targetRps > 0 ? num(targetRps) : "null");
            s.append(",\"warmupSeconds\":").append(num(warmup.toNanos() / 1e9));
            s.append(",\"durationSeconds\":").append(num(duration.toNanos() / 1e9));
            s.append(",\"requests\":").append(requests);
            s.append(",\"rps\":").append(num(rps));
            s.append(",\"achievedRps\":").append(num(achievedRps));
            s.append(",\"p50Ms\":").append(num(p50Ms));
            s.append(",\"p90Ms\":").append(num(p90Ms));
            s.append(",\"p99Ms\":").append(num(p99Ms));
            s.append(",\"p999Ms\":").append(num(p999Ms));
            s.append(",\"maxMs\":").append(num(maxMs));
            s.append(",\"late\":").append(late);
            s.append(",\"unsent\":").append(unsent);
            s.append(",\"overrunSeconds\":").append(num(overrunSeconds));
            s.append(",\"statuses\":{");
            boolean first = true;
            for (Map.Entry<Integer, Long> e : statuses.entrySet()) {
                s.append(first ? "" : ",").append(quote(String.valueOf(e.getKey()))).append(':').append(e.getValue());
                first = false;
            }
            s.append("},\"replayed\":").append(replayed);
            s.append(",\"errors\":").append(errors);
            s.append(",\"errorKinds\":{");
            first = true;
            for (Map.Entry<String, Long> e : errorKinds.entrySet()) {
                s.append(first ? "" : ",").append(quote(e.getKey())).append(':').append(e.getValue());
                first = false;
            }
            return s.append("}}\n").toString();
        }

        private static String num(double v) {
            return Double.isNaN(v) ? "null" : String.format(Locale.ROOT, "%.3f", v);
        }

        private static String quote(String v) {
            StringBuilder s = new StringBuilder("\"");
            for (char c : v.toCharArray()) {
                switch (c) {
                    case '"' -> s.append("\\\"");
                    case '\\' -> s.append("\\\\");
                    default -> {
                        if (c < 0x20) {
                            s.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                        } else {
                            s.append(c);
                        }
                    }
                }
            }
            return s.append('"').toString();
        }
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("HttpLoad: " + e.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }
        Result result;
        try {
            result = run(options, System.err);
        } catch (PrimingFailedException e) {
            System.err.println("HttpLoad: " + e.getMessage());
            System.exit(1);
            return;
        }
        System.out.println(result.line());
        if (options.json() != null) {
            Files.writeString(options.json(), result.json(options.url()), StandardCharsets.UTF_8);
        }
    }

    /** The first request of {@code replay} did not succeed, so there is nothing to replay. */
    static final class PrimingFailedException extends Exception {
        private static final long serialVersionUID = 1L;

        PrimingFailedException(String message) {
            super(message);
        }
    }

    static Result run(Options options, PrintStream log) throws InterruptedException, PrimingFailedException {
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .build();

        List<HttpRequest> replays = new ArrayList<>();
        if (options.mode() == Mode.REPLAY) {
            for (int k = 0; k < options.keys(); k++) {
                HttpRequest replay = request(options, options.bodyFor(0), IdempotencyKeys.uuidV7());
                HttpResponse<byte[]> first;
                try {
                    first = client.send(replay, HttpResponse.BodyHandlers.ofByteArray());
                } catch (IOException e) {
                    throw new PrimingFailedException("replay: the first request with key " + (k + 1) + " failed: " + e);
                }
                if (first.statusCode() / 100 != 2) {
                    throw new PrimingFailedException("replay: the first request with key " + (k + 1) + " got "
                            + first.statusCode() + ", not 2xx, so there is no success to replay: "
                            + new String(first.body(), StandardCharsets.UTF_8));
                }
                replays.add(replay);
            }
        }

        int threads = options.threads();
        Recorder[] recorders = new Recorder[threads];
        Thread[] workers = new Thread[threads];
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        long[] window = new long[3];
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Recorder recorder = new Recorder();
            recorders[t] = recorder;
            String body = options.bodyFor(t);
            workers[t] = new Thread(() -> {
                ready.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                loop(client, options, body, replays, thread, window[2], window[0], window[1], recorder);
            }, "http-load-" + t);
            workers[t].start();
        }
        ready.await();
        long start = System.nanoTime();
        window[2] = start;
        window[0] = start + options.warmup().toNanos();
        window[1] = window[0] + options.duration().toNanos();
        go.countDown();  // happens-before: the workers read window[] after await()
        for (Thread w : workers) {
            w.join();
        }
        return summarise(options, recorders, log);
    }

    private static void loop(HttpClient client, Options options, String body, List<HttpRequest> replays, int thread,
                             long start, long measureFrom, long end, Recorder recorder) {
        int next = replays.isEmpty() ? 0 : thread % replays.size();
        HttpRequest noKeyRequest = options.mode() == Mode.NO_KEY ? request(options, body, null) : null;
        boolean openLoop = options.isOpenLoop();
        long interval = openLoop ? options.intervalNanos() : 0;
        // Open loop: thread t's first request is due t/rate after the start, then one every interval.
        long due = start + (openLoop ? Math.round(thread * 1e9 / options.rate()) : 0);
        // A thread behind schedule sends what was due before the end until the drain ends, no later.
        long drainEnd = end + options.timeout().toNanos();
        while (true) {
            HttpRequest request = switch (options.mode()) {
                case NEW_KEY -> request(options, body, IdempotencyKeys.uuidV7());
                case REPLAY -> {
                    HttpRequest replay = replays.get(next);
                    next = (next + 1) % replays.size();
                    yield replay;
                }
                case NO_KEY -> noKeyRequest;
            };
            long t0;
            if (openLoop) {
                if (due - end >= 0) {
                    return;
                }
                long now = System.nanoTime();
                if (now - drainEnd >= 0) {
                    giveUp(due, interval, measureFrom, end, now, recorder);
                    return;
                }
                long wait;
                while ((wait = due - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(wait);
                }
                t0 = due;
                if (System.nanoTime() - due > interval && due - measureFrom >= 0) {
                    recorder.late++;
                }
                due += interval;
            } else {
                t0 = System.nanoTime();
                if (t0 - end >= 0) {
                    return;
                }
            }
            boolean measured = t0 - measureFrom >= 0;
            if (measured) {
                recorder.sentInWindow++;
            }
            try {
                HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
                long done = System.nanoTime();
                if (done - measureFrom >= 0 && done - end < 0) {
                    recorder.answeredInWindow++;
                }
                if (!measured) {
                    continue;
                }
                recorder.finished(done, end);
                recorder.record(done - t0);
                int status = response.statusCode();
                if (status >= 0 && status < recorder.statuses.length) {
                    recorder.statuses[status]++;
                }
                if (response.headers().firstValue(REPLAYED_HEADER).map("true"::equalsIgnoreCase).orElse(false)) {
                    recorder.replayed++;
                }
                if (status / 100 != 2 && !recorder.samples.containsKey(status)) {
                    recorder.samples.put(status, new String(response.body(), StandardCharsets.UTF_8));
                }
            } catch (IOException e) {
                if (measured) {
                    recorder.finished(System.nanoTime(), end);
                    recorder.errors++;
                    recorder.errorKinds.merge(e.getClass().getSimpleName(), 1L, Long::sum);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * Open loop, the drain over: every request from {@code due} on that was due in the measured window is
     * counted as unsent, its latency the wait it had reached at {@code now}.
     */
    static void giveUp(long due, long interval, long measureFrom, long end, long now, Recorder recorder) {
        for (long d = due; d - end < 0; d += interval) {
            if (d - measureFrom >= 0) {
                recorder.unsent++;
                recorder.record(now - d);
            }
        }
        recorder.finished(now, end);
    }

    static HttpRequest request(Options options, String body, String key) {
        HttpRequest.Builder b = HttpRequest.newBuilder(options.url())
                .timeout(options.timeout())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        if (options.authorization() != null) {
            b.header("Authorization", options.authorization());
        }
        if (options.caller() != null) {
            b.header("X-RetrySafe-Caller", options.caller());
        }
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return b.build();
    }

    static Result summarise(Options options, Recorder[] recorders, PrintStream log) {
        Histogram all = new Histogram(HIGHEST_TRACKABLE_NANOS, 3);
        long replayed = 0;
        long errors = 0;
        long late = 0;
        long unsent = 0;
        long answeredInWindow = 0;
        long overrun = 0;
        int silentThreads = 0;
        long[] statuses = new long[600];
        Map<String, Long> errorKinds = new TreeMap<>();
        Map<Integer, String> samples = new TreeMap<>();
        for (Recorder r : recorders) {
            all.add(r.latencies);
            replayed += r.replayed;
            errors += r.errors;
            late += r.late;
            unsent += r.unsent;
            answeredInWindow += r.answeredInWindow;
            overrun = Math.max(overrun, r.overrun);
            if (r.sentInWindow == 0) {
                silentThreads++;
            }
            for (int s = 0; s < statuses.length; s++) {
                statuses[s] += r.statuses[s];
            }
            r.errorKinds.forEach((k, v) -> errorKinds.merge(k, v, Long::sum));
            r.samples.forEach(samples::putIfAbsent);
        }
        long total = all.getTotalCount();
        Map<Integer, Long> statusCounts = new TreeMap<>();
        for (int s = 0; s < statuses.length; s++) {
            if (statuses[s] > 0) {
                statusCounts.put(s, statuses[s]);
            }
        }
        samples.forEach((status, body) -> log.println("HttpLoad: first " + status + " answer: " + abbreviate(body)));
        double seconds = options.duration().toNanos() / 1e9;
        double achieved = answeredInWindow / seconds;
        double overrunSeconds = overrun / 1e9;
        if (!options.isOpenLoop() && silentThreads > 0) {
            log.println("HttpLoad: " + silentThreads + " of " + recorders.length + " thread(s) sent no request during"
                    + " the measured window: each waited all of it for the answer to a request sent before it, so the"
                    + " service answered nothing in time for them, and their wait is in no percentile (a closed loop"
                    + " measures only what it sends; the open loop counts the wait)");
        }
        if (options.isOpenLoop() && (late > 0 || unsent > 0 || achieved < KEEPING_UP * options.rate())) {
            log.println(String.format(Locale.ROOT, "HttpLoad: the service did not keep up with %.1f requests per"
                    + " second: it answered %.1f per second during the measured window; %d request(s) were sent more"
                    + " than one interval after they were due, %d never sent (the drain ended %.1f s after the window);"
                    + " the last measured request finished %.3f s after the window. Every latency counts from when"
                    + " its request was due, an unsent one's up to when the drain ended; late sends with few"
                    + " threads can also mean the rate needs more threads", options.rate(), achieved, late, unsent,
                    options.timeout().toNanos() / 1e9, overrunSeconds));
        }
        return new Result(options.mode(), options.threads(), options.rate(), options.warmup(), options.duration(),
                total, total / seconds, achieved, percentileMs(all, 50), percentileMs(all, 90), percentileMs(all, 99),
                percentileMs(all, 99.9), total == 0 ? Double.NaN : all.getMaxValue() / 1e6, late, unsent,
                overrunSeconds, statusCounts, replayed, errors, errorKinds);
    }

    /** The latency at {@code percentile} (0–100), to the histogram's 3 significant digits. */
    static double percentileMs(Histogram histogram, double percentile) {
        if (histogram.getTotalCount() == 0) {
            return Double.NaN;
        }
        return histogram.getValueAtPercentile(percentile) / 1e6;
    }

    private static String abbreviate(String s) {
        String oneLine = s.replace('\n', ' ');
        return oneLine.length() <= 300 ? oneLine : oneLine.substring(0, 300) + "…";
    }
}
