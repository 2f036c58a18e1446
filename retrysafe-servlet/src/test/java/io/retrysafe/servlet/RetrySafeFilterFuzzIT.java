package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UnsupportedEncodingException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The filter under generated bad input, over real HTTP/1.1 written byte by byte: random methods,
 * paths, {@code Idempotency-Key} lines, scopes, content types and charsets, bodies (JSON, invalid
 * UTF-8, random bytes, deep nesting, over the bound), {@code Content-Length} that lies, chunked
 * bodies. Whatever arrives: no {@code 5xx}, every {@code 4xx} is problem+json of a documented type, no
 * exception leaves the filter, and the records stored before (a completed response) are byte for byte
 * the same afterwards and still replay. Once against the in-memory store in standalone mode, once
 * against PostgreSQL in transactional mode.
 *
 * <p>A failure names the seed of the request that broke it; {@code -Dretrysafe.seed=0x…} sends that
 * request first.
 */
class RetrySafeFilterFuzzIT {
    private static final int REQUESTS = 400;
    private static final int MAX_REQUEST_BYTES = 4096;
    private static final String TABLE = "rs_servlet_fuzz_it";
    private static final String SEEDED_KEY = "seeded-0f8e6c1d-5b7a-4e21-9c3d-7a2b1e0f9d84";
    private static final byte[] SEEDED_BODY = "{\"amount\":100,\"currency\":\"EUR\"}".getBytes(UTF_8);
    private static final Set<String> PROBLEM_TYPES = Stream.of(Problem.values()).map(Problem::type)
            .collect(Collectors.toSet());

    @TempDir
    Path baseDir;

    @Test
    void standaloneWithTheInMemoryStore() throws Exception {
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
        RetrySafe engine = RetrySafe.builder(store).name("fuzz-standalone").build();
        fuzz(baseDir.resolve("standalone"), config -> new RetrySafeFilter(config, IdempotentExecutor.standalone(engine),
                engine.listener()), () -> {
                    List<Object> records = new ArrayList<>();
                    for (String route : List.of("POST /payments", "PATCH /items/{id}")) {
                        Optional<IdempotencyRecord> r = store.inspect(KeyRules.DEFAULT.key("header:X-User:alice|" + route,
                                SEEDED_KEY));
                        assertThat(r).as("seeded record of %s", route).isPresent();
                        records.add(r.get());
                    }
                    return records;
                });
    }

    @Test
    void transactionalWithPostgres() throws Exception {
        DataSource ds = TestDatabases.postgres();
        JdbcIdempotencyStore jdbc = JdbcIdempotencyStore.builder(ds).table(TABLE).build();
        jdbc.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.executeUpdate("DELETE FROM " + TABLE);
        }
        TransactionalRetrySafe tx = TransactionalRetrySafe.of(RetrySafe.builder(jdbc).name("fuzz-tx").build());
        fuzz(baseDir.resolve("transactional"), config -> new RetrySafeFilter(config, new JdbcTransactionalExecutor(tx, ds),
                tx.engine().listener()), () -> rows(ds));
    }

    /** Every row, every column, as text: the rows present before must come back unchanged. */
    private static List<Object> rows(DataSource ds) {
        List<Object> rows = new ArrayList<>();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT * FROM " + TABLE + " ORDER BY scope, idem_key")) {
            ResultSetMetaData meta = rs.getMetaData();
            while (rs.next()) {
                Map<String, String> row = new LinkedHashMap<>();
                for (int i = 1; i <= meta.getColumnCount(); i++) {
                    Object v = rs.getObject(i);
                    row.put(meta.getColumnName(i), v instanceof byte[] b ? Arrays.toString(b) : String.valueOf(v));
                }
                rows.add(row);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return rows;
    }

    @FunctionalInterface
    private interface FilterFactory {
        Filter create(HttpIdempotency config);
    }

    private void fuzz(Path dir, FilterFactory retrySafe, Supplier<List<Object>> snapshot) throws Exception {
        HttpIdempotency config = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/payments").build())
                .route(IdempotentRoute.of("POST", "/optional").keyRequired(false).build())
                .route(IdempotentRoute.of("PATCH", "/items/{id}").jsonMembers("/amount", "/currency").build())
                .scope(ScopeResolver.header("X-User"))
                .maxRequestBytes(MAX_REQUEST_BYTES)
                .build();
        Guard guard = new Guard();
        Guard handlerGuard = new Guard();
        Handler handler = new Handler();
        try (EmbeddedTomcat tomcat = EmbeddedTomcat.start(dir, context -> {
            EmbeddedTomcat.filter(context, "guard", guard, "/*");
            EmbeddedTomcat.filter(context, "retrysafe", retrySafe.create(config), "/*");
            EmbeddedTomcat.filter(context, "handler-guard", handlerGuard, "/*");
            EmbeddedTomcat.servlet(context, "handler", handler, "/*");
        })) {
            int port = tomcat.uri("/").getPort();
            Response firstPayment = exchange(port, seeded("POST", "/payments"));
            Response firstItem = exchange(port, seeded("PATCH", "/items/7"));
            assertThat(firstPayment.status()).as("seeded payment: %s", firstPayment).isEqualTo(201);
            assertThat(firstItem.status()).as("seeded item: %s", firstItem).isEqualTo(201);
            List<Object> before = snapshot.get();

            String fixed = System.getProperty("retrysafe.seed");
            long base = fixed != null ? Long.parseUnsignedLong(fixed.replaceFirst("^0x", ""), 16)
                    : new SplittableRandom().nextLong();
            for (int i = 0; i < REQUESTS; i++) {
                long seed = i == 0 ? base : new SplittableRandom(base + i).nextLong();
                FuzzRequest request = FuzzRequest.generate(new SplittableRandom(seed));
                guard.escaped.clear();
                handlerGuard.escaped.clear();
                try {
                    int runsBefore = handler.runs.get();
                    Response response = exchange(port, request);
                    List<Throwable> fromTheFilter = new ArrayList<>(guard.escaped);
                    fromTheFilter.removeAll(handlerGuard.escaped);
                    assertThat(fromTheFilter).as("exceptions thrown by the filter itself").isEmpty();
                    IdempotentRoute route = config.route(request.method(), request.path());
                    boolean protectedRequest = route != null && (route.keyRequired() || request.hasKey());
                    if (protectedRequest && request.framing() == Framing.LONGER) {
                        assertRefusedAsIncomplete(request, response);
                        assertThat(handler.runs.get()).as("runs of the handler").isEqualTo(runsBefore);
                    } else if (protectedRequest) {
                        assertAcceptable(response);
                        assertThat(handlerGuard.escaped).as("exceptions of the handler on a protected route").isEmpty();
                    }
                } catch (Throwable t) {
                    throw new AssertionError("request " + (i + 1) + " of " + REQUESTS + " failed; rerun with "
                            + "-Dretrysafe.seed=0x" + Long.toHexString(seed) + "\nrequest: " + request + "\n" + t, t);
                }
            }

            List<Object> after = snapshot.get();
            assertThat(after).as("the records stored before the fuzz").containsAll(before);
            assertReplay(exchange(port, seeded("POST", "/payments")), firstPayment);
            assertReplay(exchange(port, seeded("PATCH", "/items/7")), firstItem);
        }
    }

    private static FuzzRequest seeded(String method, String path) {
        return new FuzzRequest(method, path, List.of("X-User: alice", "Idempotency-Key: \"" + SEEDED_KEY + "\"",
                "Content-Type: application/json"), SEEDED_BODY, Framing.LENGTH);
    }

    private static void assertReplay(Response retry, Response original) {
        assertThat(retry.status()).isEqualTo(original.status());
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(retry.body()).isEqualTo(original.body());
        assertThat(retry.header("Location")).isEqualTo(original.header("Location"));
        assertThat(retry.header("Content-Type")).isEqualTo(original.header("Content-Type"));
    }

    /**
     * A body cut short never runs: refused for its key, scope or size first, or else 400. Tomcat
     * answers a cut body itself: its read of the body calls sendError(400) before the filter sees the
     * IOException, so the answer is Tomcat's error page; a container that leaves the answer to the
     * application gets the filter's incomplete-body problem. A form body cut short fails inside the
     * container's parameter parsing, which takes the client for gone and closes without an answer.
     */
    private static void assertRefusedAsIncomplete(FuzzRequest request, Response response) {
        if (response.status() == 0) {
            assertThat(request.headers()).as("closed without an answer").anyMatch(h -> h.toLowerCase(Locale.ROOT)
                    .startsWith("content-type: application/x-www-form-urlencoded"));
        } else if (Problem.CONTENT_TYPE.equals(response.header("Content-Type"))) {
            assertAcceptable(response);
            assertThat(response.status()).as("status of %s", response).isBetween(400, 499);
        } else {
            assertThat(response.status()).as("status of %s", response).isEqualTo(400);
            assertThat(new String(response.body(), UTF_8)).as("Tomcat's own page").contains("HTTP Status 400");
        }
    }

    /** On a protected route, the filter answers or the handler does: never 5xx, and any 4xx is the filter's problem. */
    private static void assertAcceptable(Response response) {
        assertThat(response.status()).as("status of %s", response).isBetween(200, 499);
        if (response.status() >= 400) {
            assertThat(response.header("Content-Type")).as("content type of %s", response)
                    .isEqualTo(Problem.CONTENT_TYPE);
            String body = new String(response.body(), UTF_8);
            Matcher type = Pattern.compile("\"type\":\"([^\"]*)\"").matcher(body);
            assertThat(type.find()).as("a type in %s", body).isTrue();
            assertThat(PROBLEM_TYPES).as("documented problem types").contains(type.group(1));
            assertThat(body).contains("\"status\":" + response.status());
        }
    }

    // ---- the application

    /** Records whatever the rest of the chain lets escape, then lets it go on; one outside the filter, one inside. */
    static final class Guard implements Filter {
        final Queue<Throwable> escaped = new ConcurrentLinkedQueue<>();

        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
                throws IOException, ServletException {
            try {
                chain.doFilter(req, res);
            } catch (IOException | ServletException | RuntimeException | Error e) {
                escaped.add(e);
                throw e;
            }
        }
    }

    /** Answers every method with 201 and a body unique to the run; reads the body as a handler would, by stream or reader. */
    static final class Handler extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final AtomicInteger runs = new AtomicInteger();

        @Override
        protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            int read;
            if (req.getHeader("X-Read") != null) {
                try {
                    read = req.getReader().read(new char[8192]);
                } catch (UnsupportedEncodingException e) {
                    // What the Servlet API documents for an unknown charset; the handler ignores the body.
                    read = -1;
                } catch (CharacterCodingException e) {
                    // Bytes not in the charset, as Tomcat's own reader reports them; ignored as well.
                    read = -2;
                }
            } else {
                read = req.getInputStream().readAllBytes().length;
            }
            int run = runs.incrementAndGet();
            resp.setStatus(201);
            resp.setHeader("Location", "/things/" + run);
            resp.setContentType("application/json");
            resp.getOutputStream().write(("{\"run\":" + run + ",\"read\":" + read + "}").getBytes(UTF_8));
        }
    }

    // ---- requests

    enum Framing {
        /** Content-Length is the body's length. */
        LENGTH,
        /** Content-Length says less than is sent. */
        SHORTER,
        /** Content-Length says more than is sent; the client then closes its side. */
        LONGER,
        /** Transfer-Encoding: chunked, in random chunk sizes. */
        CHUNKED
    }

    record FuzzRequest(String method, String target, List<String> headers, byte[] body, Framing framing) {
        boolean hasKey() {
            return headers.stream().anyMatch(h -> h.startsWith("Idempotency-Key:"));
        }

        /** The path without the query, as the filter matches it. */
        String path() {
            int q = target.indexOf('?');
            return q < 0 ? target : target.substring(0, q);
        }

        static FuzzRequest generate(SplittableRandom r) {
            String method = pick(r, "POST", "POST", "POST", "POST", "PATCH", "PATCH", "PUT", "GET", "DELETE", "post",
                    "OPTIONS", "FOO");
            String target = pick(r, "/payments", "/payments", "/payments", "/payments?x=1&y=%41", "/payments/",
                    "/optional", "/items/7", "/items/7", "/items/", "/elsewhere");
            List<String> headers = new ArrayList<>();
            if (r.nextInt(8) != 0) {
                headers.add("X-User: " + pick(r, "alice", "alice", "bob", "", " ", text(r, 1 + r.nextInt(300), true)));
            }
            int keys = r.nextInt(10) < 7 ? 1 : r.nextInt(4);
            for (int i = 0; i < keys; i++) {
                headers.add("Idempotency-Key: " + key(r));
            }
            if (r.nextInt(8) != 0) {
                headers.add("Content-Type: " + pick(r, "application/json", "application/json", "application/json; charset=utf-8",
                        "application/json; charset=ISO-8859-1", "application/json; charset=no-such-charset",
                        "application/json; charset=\"utf 8\"", "APPLICATION/JSON", "application/merge-patch+json",
                        "text/plain; charset=x-unknown", "text/plain", "application/x-www-form-urlencoded",
                        "application/x-www-form-urlencoded; charset=bogus", "multipart/form-data; boundary=zz",
                        "application/octet-stream", "a/b;c", ";", text(r, 1 + r.nextInt(40), false)));
            }
            if (r.nextInt(3) == 0) {
                headers.add("X-Read: reader");
            }
            Framing framing = r.nextInt(10) < 6 ? Framing.LENGTH : pick(r, Framing.SHORTER, Framing.LONGER, Framing.CHUNKED);
            return new FuzzRequest(method, target, headers, body(r), framing);
        }

        private static String key(SplittableRandom r) {
            return switch (r.nextInt(9)) {
                case 0 -> SEEDED_KEY;
                case 1 -> "\"" + SEEDED_KEY + "\"";
                case 2 -> "k".repeat(254 + r.nextInt(4));
                case 3 -> "\"" + text(r, r.nextInt(30), false).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
                case 4 -> "\"" + text(r, r.nextInt(30), false) + pick(r, "\"", "", "\",x", "\"\\", "\\n\"");
                case 5 -> text(r, r.nextInt(300), true);
                case 6 -> "";
                default -> "key-" + Long.toHexString(r.nextLong());
            };
        }

        private static byte[] body(SplittableRandom r) {
            return switch (r.nextInt(10)) {
                case 0 -> new byte[0];
                case 1 -> ("{\"amount\":" + r.nextInt(200) + ",\"currency\":\"EUR\",\"note\":\"" + text(r, 10, false)
                        .replace("\\", "").replace("\"", "") + "\"}").getBytes(UTF_8);
                case 2 -> SEEDED_BODY.clone();
                case 3 -> {
                    byte[] b = new byte[r.nextInt(300)];
                    r.nextBytes(b);
                    yield b;
                }
                case 4 -> ("{\"amount\":\"\u00e9\",\"x\":\"" + "\u00ff\u00fe" + "\"}").getBytes(ISO_8859_1); // not UTF-8
                case 5 -> "[".repeat(1 + r.nextInt(MAX_REQUEST_BYTES)).getBytes(UTF_8);
                case 6 -> new byte[MAX_REQUEST_BYTES - 1 + r.nextInt(3 * MAX_REQUEST_BYTES)];
                case 7 -> ("amount=" + r.nextInt(100) + "&memo=%E9%ZZ&&=&x").getBytes(ISO_8859_1);
                case 8 -> ("{\"amount\":1e" + "9".repeat(1 + r.nextInt(40)) + ",\"n\":" + "7".repeat(r.nextInt(3000))
                        + ",\"s\":\"\\ud800\"}").getBytes(UTF_8);
                default -> ("{\"currency\":\"EUR\",\"amount\":100" + " ".repeat(r.nextInt(3)) + "}").getBytes(UTF_8);
            };
        }

        /** Header-safe text: visible ASCII and, if asked, obs-text bytes (0x80-0xFF), no CR, LF or other controls. */
        private static String text(SplittableRandom r, int length, boolean obsText) {
            StringBuilder s = new StringBuilder();
            for (int i = 0; i < length; i++) {
                s.append(obsText && r.nextInt(4) == 0 ? (char) r.nextInt(0x80, 0x100) : (char) r.nextInt(0x21, 0x7f));
            }
            return s.toString();
        }

        @SafeVarargs
        private static <T> T pick(SplittableRandom r, T... choices) {
            return choices[r.nextInt(choices.length)];
        }

        byte[] bytes() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            StringBuilder head = new StringBuilder(method).append(' ').append(target).append(" HTTP/1.1\r\n")
                    .append("Host: 127.0.0.1\r\nConnection: close\r\n");
            headers.forEach(h -> head.append(h).append("\r\n"));
            switch (framing) {
                case LENGTH -> head.append("Content-Length: ").append(body.length).append("\r\n");
                case SHORTER -> head.append("Content-Length: ").append(body.length / 2).append("\r\n");
                case LONGER -> head.append("Content-Length: ").append(body.length + 1 + body.length / 2).append("\r\n");
                case CHUNKED -> head.append("Transfer-Encoding: chunked\r\n");
            }
            out.writeBytes(head.append("\r\n").toString().getBytes(ISO_8859_1));
            if (framing == Framing.CHUNKED) {
                int at = 0;
                while (at < body.length) {
                    int n = Math.min(body.length - at, 1 + (at * 31 + 7) % 1500);
                    out.writeBytes((Integer.toHexString(n) + "\r\n").getBytes(ISO_8859_1));
                    out.write(body, at, n);
                    out.writeBytes("\r\n".getBytes(ISO_8859_1));
                    at += n;
                }
                out.writeBytes("0\r\n\r\n".getBytes(ISO_8859_1));
            } else {
                out.writeBytes(body);
            }
            return out.toByteArray();
        }

        @Override
        public String toString() {
            String shown = new String(body, ISO_8859_1);
            return method + " " + target + " " + headers + " " + framing + " body[" + body.length + "]: "
                    + (shown.length() > 200 ? shown.substring(0, 200) + "…" : shown);
        }
    }

    // ---- responses

    record Response(int status, Map<String, String> headers, byte[] body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        @Override
        public String toString() {
            return status + " " + headers + " " + new String(body, UTF_8);
        }
    }

    /** One request on its own connection; the client closes its side after the bytes, as a client that is done would. */
    private static Response exchange(int port, FuzzRequest request) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(request.bytes());
            socket.getOutputStream().flush();
            socket.shutdownOutput();
            return parse(socket.getInputStream(), request.method().equals("HEAD"));
        }
    }

    private static Response parse(InputStream in, boolean head) throws IOException {
        byte[] all = in.readAllBytes();
        if (all.length == 0) {
            return new Response(0, Map.of(), all); // closed without an answer
        }
        String text = new String(all, ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        assertThat(end).as("a complete response head in %s", text).isPositive();
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.putIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        byte[] body = Arrays.copyOfRange(all, end + 4, all.length);
        if (!head && "chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            body = dechunk(body);
        }
        return new Response(status, headers, body);
    }

    private static byte[] dechunk(byte[] chunked) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int at = 0;
        while (true) {
            int lineEnd = indexOfCrlf(chunked, at);
            int size = Integer.parseInt(new String(chunked, at, lineEnd - at, ISO_8859_1).split(";")[0].trim(), 16);
            at = lineEnd + 2;
            if (size == 0) {
                return out.toByteArray();
            }
            out.write(chunked, at, size);
            at += size + 2;
        }
    }

    private static int indexOfCrlf(byte[] b, int from) {
        for (int i = from; i + 1 < b.length; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n') {
                return i;
            }
        }
        throw new IllegalStateException("a chunk size line without CRLF");
    }
}
