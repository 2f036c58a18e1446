package io.retrysafe.benchmarks;

import io.retrysafe.testservices.TestDatabases;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Counts what each variant of {@link PaymentTransactionBenchmark} exchanges with PostgreSQL per
 * payment, through a TCP proxy between the pool and the server that parses the wire protocol.
 *
 * <ul>
 *   <li><b>round trips</b>: times the client sends while it has no request outstanding, that is,
 *       after it received the answer ({@code ReadyForQuery}) to everything it had sent. Messages
 *       pipelined behind an unanswered request ride in the same round trip: pgjdbc sends the
 *       {@code BEGIN} of a transaction as a simple query immediately followed, in the same write,
 *       by the first statement;
 *   <li><b>syncs</b>: {@code ReadyForQuery} messages, one per {@code Sync} or simple {@code Query};
 *       the {@code BEGIN} above is one of them without costing a round trip;
 *   <li><b>statements</b>: {@code Execute} messages (extended protocol; the simple-query
 *       {@code BEGIN} is not one); {@code Flush} messages are counted too and should be 0;
 *   <li><b>checkouts</b> from the pool, and bytes each way.
 * </ul>
 *
 * <p>Then, with the variants taking turns payment by payment: the time of each round trip at the
 * proxy, the wall time of a payment, and CPU per payment: the calling thread's (the engine, pgjdbc
 * and Hikari all run on it; the proxy's threads do not) and that of the connection's PostgreSQL
 * backend, from {@code /proc/<pid>/schedstat} when the server runs on this host (the WAL writer,
 * checkpointer and the kernel's disk work are in neither).
 *
 * <p>One thread; the pool has one connection (which also shows that no variant holds two at once)
 * and Hikari's liveness check on checkout is disabled, so only the variant's own traffic is counted.
 * Usage: {@code java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.RoundTrips
 * [payments per variant, default 500]}; add {@code -Droundtrips.trace=true} to print the messages of
 * one payment per variant ({@code >} to the server, {@code <} from it).
 */
public final class RoundTrips {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** A PostgreSQL JDBC URL: host, port (optional), database, parameters. */
    static final Pattern PG_URL = Pattern.compile("jdbc:postgresql://([^/:?,]+)(?::(\\d+))?/([^?]*)(\\?.*)?");

    private RoundTrips() {}

    public static void main(String[] args) throws Exception {
        int payments = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        boolean trace = Boolean.getBoolean("roundtrips.trace");
        // Otherwise a connection idle for 500 ms gets an isValid() round trip on checkout.
        System.setProperty("com.zaxxer.hikari.aliveBypassWindowMs", "3600000");

        String url = TestDatabases.postgresJdbcUrl();
        Matcher m = PG_URL.matcher(url);
        if (!m.matches()) {
            throw new IllegalArgumentException("expected jdbc:postgresql://host[:port]/database[?...], but was " + url);
        }
        String host = m.group(1);
        int port = m.group(2) == null ? 5432 : Integer.parseInt(m.group(2));
        String params = m.group(4) == null ? "" : m.group(4).substring(1) + "&";

        try (Proxy proxy = new Proxy(host, port)) {
            // No TLS or GSS negotiation, so every message after the startup packet is framed and parseable.
            String proxied = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/" + m.group(3) + "?" + params
                    + "sslmode=disable&gssEncMode=disable";
            System.out.printf(Locale.ROOT, "PostgreSQL %s through a counting proxy; per payment, mean of %d"
                    + " payments after %d warm-up payments%n%n", url, payments, payments / 5);
            System.out.printf(Locale.ROOT, "%-18s %11s %6s %10s %7s %9s %10s %10s%n", "variant",
                    "round trips", "syncs", "statements", "flushes", "checkouts", "bytes sent", "bytes recv");
            for (PaymentWorkload.Variant variant : PaymentWorkload.Variant.values()) {
                LongAdder checkouts = new LongAdder();
                try (PaymentWorkload workload = PaymentWorkload.open(proxied, TestDatabases.postgresUser(),
                        TestDatabases.postgresPassword(), 1, checkouts)) {
                    workload.reset();
                    for (int i = 0; i < payments / 5; i++) {
                        workload.pay(variant); // warm-up: pgjdbc moves to server-side prepared statements after 5 uses
                    }
                    workload.analyze();
                    Counts before = proxy.counts();
                    long checkoutsBefore = checkouts.sum();
                    for (int i = 0; i < payments; i++) {
                        workload.pay(variant);
                    }
                    Counts d = proxy.counts().minus(before);
                    double n = payments;
                    System.out.printf(Locale.ROOT, "%-18s %11.2f %6.2f %10.2f %7.2f %9.2f %10.1f %10.1f%n",
                            variant.name().toLowerCase(Locale.ROOT), d.roundTrips / n, d.readyForQuery / n,
                            d.executes / n, d.flushes / n, (checkouts.sum() - checkoutsBefore) / n,
                            d.bytesToServer / n, d.bytesToClient / n);
                    if (trace) {
                        System.out.println("    " + proxy.trace(() -> workload.pay(variant)));
                    }
                }
            }
            try (PaymentWorkload workload = PaymentWorkload.open(proxied, TestDatabases.postgresUser(),
                    TestDatabases.postgresPassword(), 1)) {
                workload.reset();
                System.out.printf(Locale.ROOT, "%nVariants taking turns payment by payment, so that a change in the"
                        + " machine's load hits all of them alike. Microseconds: the median of each round trip in the"
                        + " order the payment makes them (at the proxy: the server's answer plus loopback), their sum,"
                        + " the median wall time of a payment at the client, and the mean CPU time per payment of the"
                        + " calling thread and of the PostgreSQL backend:%n");
                proxy.time(workload, payments, backendSchedstat(workload)).forEach(System.out::println);
            }
        }
    }

    /**
     * CPU time of the payment's own PostgreSQL backend, from {@code /proc/<pid>/schedstat} (nanoseconds
     * on CPU); null when the server is not on this host or the file cannot be read. The pool has one
     * connection, so one backend serves every statement of every variant.
     */
    private static Path backendSchedstat(PaymentWorkload workload) throws SQLException {
        try (Connection c = workload.dataSource().getConnection()) {
            return backendSchedstat(c);
        }
    }

    /** The schedstat file of the backend serving {@code c}; null when it cannot be read ({@link #runNanos}). */
    static Path backendSchedstat(Connection c) throws SQLException {
        int pid;
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            pid = rs.getInt(1);
        }
        Path path = Path.of("/proc", Integer.toString(pid), "schedstat");
        return runNanos(path) < 0 ? null : path;
    }

    /** Nanoseconds on CPU so far, from a schedstat file; -1 without one. */
    static long runNanos(Path schedstat) {
        if (schedstat == null) {
            return -1;
        }
        try {
            return Long.parseLong(Files.readString(schedstat).trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private record Counts(long roundTrips, long readyForQuery, long executes, long flushes, long bytesToServer,
            long bytesToClient) {
        Counts minus(Counts o) {
            return new Counts(roundTrips - o.roundTrips, readyForQuery - o.readyForQuery, executes - o.executes,
                    flushes - o.flushes, bytesToServer - o.bytesToServer, bytesToClient - o.bytesToClient);
        }
    }

    private interface Call {
        void run() throws Exception;
    }

    /** One connection's state: requests (Sync, Query, startup) not yet answered, and whether a round trip is open. */
    private static final class Exchange {
        final AtomicInteger outstanding = new AtomicInteger();
        final AtomicBoolean open = new AtomicBoolean();
        volatile long openedAt;
    }

    /** Forwards every accepted connection to PostgreSQL and counts protocol messages on the way. */
    private static final class Proxy implements AutoCloseable {
        private final ServerSocket server;
        private final String host;
        private final int targetPort;
        private final AtomicLong roundTrips = new AtomicLong();
        private final AtomicLong readyForQuery = new AtomicLong();
        private final AtomicLong executes = new AtomicLong();
        private final AtomicLong flushes = new AtomicLong();
        private final AtomicLong bytesToServer = new AtomicLong();
        private final AtomicLong bytesToClient = new AtomicLong();
        private final StringBuffer trace = new StringBuffer();
        // Duration of each round trip, first client byte to the ReadyForQuery that ends it, while timing.
        private final ConcurrentLinkedQueue<Long> roundTripNanos = new ConcurrentLinkedQueue<>();
        private volatile boolean timing;
        private volatile boolean tracing;

        Proxy(String host, int targetPort) throws IOException {
            this.host = host;
            this.targetPort = targetPort;
            this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread acceptor = new Thread(this::accept, "round-trips-proxy");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        Counts counts() {
            return new Counts(roundTrips.get(), readyForQuery.get(), executes.get(), flushes.get(),
                    bytesToServer.get(), bytesToClient.get());
        }

        /** Times {@code payments} payments of each variant, taking turns; one line per variant. */
        List<String> time(PaymentWorkload workload, int payments, Path schedstat) throws Exception {
            PaymentWorkload.Variant[] variants = PaymentWorkload.Variant.values();
            for (int i = 0; i < payments / 5; i++) {
                for (PaymentWorkload.Variant v : variants) {
                    workload.pay(v); // warm-up
                }
            }
            // Plans for tables that are no longer empty, as autovacuum would give them: without this, the
            // statements prepared during the warm-up keep a sequential scan of each growing table.
            workload.analyze();
            long[][] wall = new long[variants.length][payments];
            long[] clientCpu = new long[variants.length];
            long[] backendCpu = new long[variants.length];
            List<List<Long[]>> roundTrips = new ArrayList<>();
            for (int v = 0; v < variants.length; v++) {
                roundTrips.add(new ArrayList<>());
            }
            for (int i = 0; i < payments; i++) {
                for (int v = 0; v < variants.length; v++) {
                    roundTripNanos.clear();
                    long backendBefore = runNanos(schedstat);
                    long cpuBefore = THREADS.getCurrentThreadCpuTime();
                    timing = true;
                    long start = System.nanoTime();
                    try {
                        workload.pay(variants[v]);
                    } finally {
                        wall[v][i] = System.nanoTime() - start;
                        timing = false;
                    }
                    clientCpu[v] += THREADS.getCurrentThreadCpuTime() - cpuBefore;
                    backendCpu[v] += runNanos(schedstat) - backendBefore;
                    roundTrips.get(v).add(roundTripNanos.toArray(new Long[0]));
                }
            }
            // The columns of round trips are as many as the longest payment makes (the phased one: 10).
            int columns = roundTrips.stream().mapToInt(each -> each.get(0).length).max().orElse(0);
            List<String> lines = new ArrayList<>();
            for (int v = 0; v < variants.length; v++) {
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-18s",
                        variants[v].name().toLowerCase(Locale.ROOT)));
                List<Long[]> each = roundTrips.get(v);
                int perPayment = each.get(0).length;
                if (each.stream().anyMatch(rts -> rts.length != perPayment)) {
                    lines.add(line + " (round trips per payment not constant)");
                    continue;
                }
                long sum = 0;
                for (int rt = 0; rt < perPayment; rt++) {
                    long[] at = new long[payments];
                    for (int i = 0; i < payments; i++) {
                        at[i] = each.get(i)[rt];
                    }
                    long median = median(at);
                    sum += median;
                    line.append(String.format(Locale.ROOT, " %6d", median / 1000));
                }
                lines.add(line.append(String.format(Locale.ROOT, "%s | sum %6d | payment %6d | CPU client %5d, backend %s",
                        " ".repeat(7 * (columns - perPayment)), sum / 1000, median(wall[v]) / 1000,
                        clientCpu[v] / payments / 1000,
                        schedstat == null ? "n/a" : Long.toString(backendCpu[v] / payments / 1000))).toString());
            }
            return lines;
        }

        private static long median(long[] values) {
            long[] sorted = values.clone();
            Arrays.sort(sorted);
            return sorted[sorted.length / 2];
        }

        String trace(Call call) throws Exception {
            trace.setLength(0);
            tracing = true;
            try {
                call.run();
            } finally {
                tracing = false;
            }
            return trace.toString().strip();
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket client = server.accept();
                    Socket upstream = new Socket(host, targetPort);
                    client.setTcpNoDelay(true);
                    upstream.setTcpNoDelay(true);
                    Exchange exchange = new Exchange();
                    pump(client, upstream, true, exchange);
                    pump(upstream, client, false, exchange);
                } catch (IOException e) {
                    if (!server.isClosed()) {
                        System.err.println("[round-trips] proxy: " + e);
                    }
                }
            }
        }

        private void pump(Socket from, Socket to, boolean toServer, Exchange exchange) {
            Thread t = new Thread(() -> {
                try (from; to) {
                    copy(from.getInputStream(), to.getOutputStream(), toServer, exchange);
                } catch (IOException e) {
                    // one side closed: both are closed by try-with-resources
                }
            }, toServer ? "round-trips-to-server" : "round-trips-to-client");
            t.setDaemon(true);
            t.start();
        }

        /**
         * Copies message by message. The client's first message (startup) has no type byte; every other
         * one, both ways, is a type byte and a 4-byte length that counts itself. Flushes whenever nothing
         * more is buffered, so the proxy never holds back what an endpoint waits for. The reply to the
         * startup ends with a ReadyForQuery too, so connecting counts one round trip (outside the
         * measured payments: the pool connects first).
         */
        private void copy(InputStream rawIn, OutputStream rawOut, boolean toServer, Exchange exchange)
                throws IOException {
            DataInputStream in = new DataInputStream(new BufferedInputStream(rawIn, 65536));
            OutputStream out = new BufferedOutputStream(rawOut, 65536);
            byte[] buf = new byte[8192];
            boolean startup = toServer;
            while (true) {
                int type;
                int length;
                try {
                    type = startup ? -1 : in.readUnsignedByte();
                    length = in.readInt();
                } catch (EOFException e) {
                    out.flush();
                    return;
                }
                if (type >= 0) {
                    out.write(type);
                }
                out.write(new byte[] {(byte) (length >>> 24), (byte) (length >>> 16), (byte) (length >>> 8),
                        (byte) length});
                int body = length - 4;
                String head = null;
                for (int left = body; left > 0; ) {
                    int n = in.read(buf, 0, Math.min(buf.length, left));
                    if (n < 0) {
                        throw new EOFException("connection closed inside a message");
                    }
                    if (head == null && tracing && toServer && (type == 'Q' || type == 'P')) {
                        head = new String(buf, 0, Math.min(n, 60), StandardCharsets.UTF_8).replace('\0', '|');
                    }
                    out.write(buf, 0, n);
                    left -= n;
                }
                if (toServer) {
                    bytesToServer.addAndGet(body + (startup ? 4 : 5));
                    if (type != 'X' && exchange.open.compareAndSet(false, true)) {
                        roundTrips.incrementAndGet(); // everything sent before was answered: a new round trip
                        exchange.openedAt = System.nanoTime();
                    }
                    if (startup || type == 'S' || type == 'Q') {
                        exchange.outstanding.incrementAndGet();
                    } else if (type == 'E') {
                        executes.incrementAndGet();
                    } else if (type == 'H') {
                        flushes.incrementAndGet();
                    }
                } else {
                    bytesToClient.addAndGet(body + 5);
                    if (type == 'Z') {
                        readyForQuery.incrementAndGet();
                        if (exchange.outstanding.decrementAndGet() == 0) {
                            if (timing) {
                                roundTripNanos.add(System.nanoTime() - exchange.openedAt);
                            }
                            exchange.open.set(false);
                        }
                    }
                }
                if (tracing) {
                    trace.append(toServer ? " >" : " <").append(type < 0 ? "startup" : String.valueOf((char) type));
                    if (head != null) {
                        trace.append('[').append(head.strip()).append(']');
                    }
                }
                startup = false;
                if (in.available() == 0) {
                    out.flush();
                }
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
