package io.retrysafe.gateway;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The service behind the gateway in tests: a JDK HTTP server on loopback that counts its calls per
 * {@code Idempotency-Key} and answers {@code 201} with a JSON body unique to the call, naming the attempt header it
 * got. Query parameters change that: {@code status=N} answers N; {@code block=NAME} waits until the test
 * {@link #release releases} NAME; {@code hang} never answers (the connection is left open until the test ends);
 * {@code big=N} answers N bytes; {@code fail-once=NAME} answers {@code 503} the first time;
 * {@code delay=MS} waits that long first; {@code remember} makes one payment per key and repeats its answer;
 * {@code gzip} answers its body gzip-compressed, labelled so.
 */
final class TestUpstream implements AutoCloseable {
    private final HttpServer server;
    private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
    private final Map<String, CountDownLatch> latches = new ConcurrentHashMap<>();
    private final CountDownLatch closing = new CountDownLatch(1);
    /** The headers of the last call, lower-case names, each name's first value. */
    volatile Map<String, String> lastHeaders = Map.of();
    /** Per raw path (as the upstream received it, without the query): its calls. */
    private final Map<String, AtomicInteger> paths = new ConcurrentHashMap<>();
    /** The body of the last call, as received. */
    volatile byte[] lastBody = new byte[0];
    /** The raw path of the last call, without the query. */
    volatile String lastPath;
    /** Per key: each call's attempt header and when it began and ended (nanoTime), in order of arrival. */
    final Map<String, java.util.List<Call>> history = new ConcurrentHashMap<>();
    /** Per key, with {@code remember}: the answer of its one effect. */
    private final Map<String, byte[]> remembered = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

    /** One call as the upstream saw it. */
    static final class Call {
        final String attempt;
        final long began = System.nanoTime();
        volatile long ended;

        Call(String attempt) {
            this.attempt = attempt;
        }
    }
    private final java.util.Set<String> failedOnce = ConcurrentHashMap.newKeySet();

    private TestUpstream(HttpServer server) {
        this.server = server;
    }

    static TestUpstream start() throws IOException {
        TestUpstream upstream = bound(256);
        upstream.open();
        return upstream;
    }

    /**
     * Listening with an accept queue of {@code backlog} connections, and accepting none until {@link #open()}: with
     * its queue {@link #fillAcceptQueue() filled}, a connection attempt hangs in its handshake until the client's
     * connect timeout.
     */
    static TestUpstream bound(int backlog) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), backlog);
        TestUpstream upstream = new TestUpstream(server);
        server.createContext("/", upstream::handle);
        server.setExecutor(Executors.newCachedThreadPool());
        return upstream;
    }

    /** Starts accepting connections, those already queued first. */
    void open() {
        server.start();
    }

    /**
     * Connects until a connection attempt times out, on an upstream that accepts none yet ({@link #bound}), and
     * returns the connections that got in (the caller closes them). Linux queues {@code backlog + 1} connections and
     * then drops every further SYN, so a client's connect hangs, its SYN sent again and dropped again, until its own
     * timeout: a connect timeout on loopback, without a firewall rule or an unroutable address. A connect on loopback
     * that is not dropped completes within milliseconds (the kernel answers the handshake), far within the 2 s that
     * each attempt is given, so the first attempt that times out says the queue is full; it stays full while nothing
     * accepts.
     */
    List<Socket> fillAcceptQueue() throws IOException {
        List<Socket> queued = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            Socket socket = new Socket();
            try {
                socket.connect(server.getAddress(), 2_000);
            } catch (SocketTimeoutException e) {
                socket.close();
                return queued;
            }
            queued.add(socket);
        }
        for (Socket socket : queued) {
            socket.close();
        }
        throw new AssertionError("the accept queue took " + queued.size() + " connections and still took more: "
                + "this kernel does not drop connection attempts when a listener's accept queue is full");
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** The calls the upstream got on this raw path (without the query), whatever their key. */
    int callsOn(String path) {
        AtomicInteger n = paths.get(path);
        return n == null ? 0 : n.get();
    }

    int calls(String key) {
        AtomicInteger n = calls.get(key);
        return n == null ? 0 : n.get();
    }

    /** Payments made for the key (with {@code remember}: once, whatever the number of calls). */
    int effects(String key) {
        AtomicInteger n = effects.get(key);
        return n == null ? 0 : n.get();
    }

    CountDownLatch latch(String name) {
        return latches.computeIfAbsent(name, n -> new CountDownLatch(1));
    }

    void release(String name) {
        latch(name).countDown();
    }

    private void handle(HttpExchange exchange) throws IOException {
        byte[] received = exchange.getRequestBody().readAllBytes();
        lastBody = received;
        lastPath = exchange.getRequestURI().getRawPath();
        paths.computeIfAbsent(lastPath, p -> new AtomicInteger()).incrementAndGet();
        String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
        int call = calls.computeIfAbsent(key == null ? "-" : key, k -> new AtomicInteger()).incrementAndGet();
        Map<String, String> headers = new HashMap<>();
        exchange.getRequestHeaders().forEach((name, values) -> headers.put(name.toLowerCase(), values.get(0)));
        lastHeaders = headers;
        Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
        Call seen = new Call(exchange.getRequestHeaders().getFirst("Idempotency-Attempt"));
        if (key != null) {
            history.computeIfAbsent(key, k -> java.util.Collections.synchronizedList(new java.util.ArrayList<>())).add(seen);
        }
        try {
            serve(exchange, key, call, received, query);
        } finally {
            seen.ended = System.nanoTime();
        }
    }

    private void serve(HttpExchange exchange, String key, int call, byte[] received, Map<String, String> query)
            throws IOException {
        try {
            if (query.containsKey("delay")) {
                Thread.sleep(Long.parseLong(query.get("delay")));
            }
            if (query.containsKey("hang")) {
                closing.await(60, TimeUnit.SECONDS);
                exchange.close();
                return;
            }
            if (query.containsKey("block")) {
                latch(query.get("block")).await(60, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        int status = query.containsKey("status") ? Integer.parseInt(query.get("status")) : 201;
        if (query.containsKey("fail-once") && failedOnce.add(query.get("fail-once"))) {
            status = 503;
        }
        if (query.containsKey("big")) {
            long size = Long.parseLong(query.get("big"));
            exchange.getResponseHeaders().add("Content-Type", "application/octet-stream");
            // With chunked, of unknown length: the length goes unsaid (0 is HttpServer's chunked).
            exchange.sendResponseHeaders(status, query.containsKey("chunked") ? 0 : size);
            byte[] chunk = new byte[64 * 1024];
            java.util.Arrays.fill(chunk, (byte) 'x');
            try (OutputStream out = exchange.getResponseBody()) {
                for (long left = size; left > 0; left -= chunk.length) {
                    out.write(chunk, 0, (int) Math.min(chunk.length, left));
                }
            }
            return;
        }
        if (query.containsKey("cut")) {
            // Declares a length and sends half of it, then the connection closes.
            exchange.sendResponseHeaders(status, 100);
            exchange.getResponseBody().write(new byte[50]);
            exchange.getResponseBody().flush();
            exchange.close();
            return;
        }
        if (query.containsKey("remember") && key != null) {
            // A service with an Idempotency-Key of its own: one payment per key, its answer repeated.
            byte[] first = remembered.computeIfAbsent(key, k -> {
                effects.computeIfAbsent(k, e -> new AtomicInteger()).incrementAndGet();
                return ("{\"payment\":\"" + UUID.randomUUID() + "\"}").getBytes(UTF_8);
            });
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(201, first.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(first);
            }
            return;
        }
        String payment = UUID.randomUUID().toString();
        byte[] body = ("{\"payment\":\"" + payment + "\",\"call\":" + call + ",\"attempt\":\""
                + exchange.getRequestHeaders().getFirst("Idempotency-Attempt") + "\",\"received\":" + received.length
                + "}").getBytes(UTF_8);
        if (query.containsKey("gzip")) {
            java.io.ByteArrayOutputStream zipped = new java.io.ByteArrayOutputStream();
            try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(zipped)) {
                gz.write(body);
            }
            body = zipped.toByteArray();
            exchange.getResponseHeaders().add("Content-Encoding", "gzip");
            exchange.getResponseHeaders().add("Vary", "Accept-Encoding");
        }
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.getResponseHeaders().add("Location", "/payments/" + payment);
        exchange.getResponseHeaders().add("Set-Cookie", "session=" + payment);
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> out = new HashMap<>();
        if (raw != null) {
            for (String pair : raw.split("&")) {
                int eq = pair.indexOf('=');
                out.put(eq < 0 ? pair : pair.substring(0, eq), eq < 0 ? "" : pair.substring(eq + 1));
            }
        }
        return out;
    }

    @Override
    public void close() {
        closing.countDown();
        latches.values().forEach(CountDownLatch::countDown);
        server.stop(0);
    }
}
