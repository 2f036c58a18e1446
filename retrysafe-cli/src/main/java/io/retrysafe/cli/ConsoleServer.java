package io.retrysafe.cli;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyLint;
import io.retrysafe.KeyLint.LintReport;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.jdbc.JdbcAdmin.KeyedSummary;
import io.retrysafe.jdbc.JdbcAdmin.Stats;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The operator's console: a few server-rendered pages over one records table, served by the JDK's
 * HTTP server. It reads and releases through the same {@link io.retrysafe.jdbc.JdbcAdmin} calls as
 * the {@code list}, {@code inspect}, {@code release} and {@code stats} commands, and checks keys as
 * {@code lint} and {@code keygen} do. Every request needs the access token; every change is a POST
 * with the CSRF token from a form the console served.
 */
final class ConsoleServer implements AutoCloseable {
    /** The most records a listing reads; the overview groups as many of the oldest. */
    static final int LIMIT = 1_000;
    /** The largest form accepted. */
    static final int MAX_FORM_BYTES = 64 * 1024;
    /** The most keys one lint checks. */
    static final int MAX_LINT_KEYS = 100;

    private static final String CSP = "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
            + "form-action 'self'; frame-ancestors 'none'";

    private final Database db;
    private final ConsoleConfig config;
    private final RecordRefs refs;
    private final HttpServer server;
    private final ExecutorService executor;
    private final ConsoleAccess access;
    private final ConsolePages pages;
    private final Redactor redactor;

    private ConsoleServer(Database db, ConsoleConfig config) throws IOException {
        this.db = db;
        this.config = config;
        this.refs = new RecordRefs(new SecureRandom());
        this.server = HttpServer.create(config.address(), 0);
        this.access = new ConsoleAccess(config, server.getAddress().getPort());
        this.pages = new ConsolePages(db.store.table(), access.csrf(), config.revealKeys());
        this.redactor = new Redactor(db.settings.password());
        // Two threads: an operator's browser, not a crowd; the store is asked one short statement at a time.
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "retrysafe-console");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", this::handle);
    }

    /** Listens on the configured address; the port is {@link #port()} when 0 was asked. */
    static ConsoleServer start(Database db, ConsoleConfig config) {
        try {
            ConsoleServer console = new ConsoleServer(db, config);
            console.server.start();
            return console;
        } catch (IOException e) {
            throw new CliException(Exit.FAILED, "cannot listen on " + config.address() + ": " + e.getMessage(), e);
        }
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** The address to open, with the token for the first visit. */
    String url() {
        InetSocketAddress a = server.getAddress();
        String host = a.getAddress().isAnyLocalAddress() ? "localhost" : a.getAddress().getHostAddress();
        return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort() + "/";
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- the front door

    private void handle(HttpExchange ex) {
        try {
            Headers out = ex.getResponseHeaders();
            out.set("Content-Security-Policy", CSP);
            out.set("X-Frame-Options", "DENY");
            out.set("X-Content-Type-Options", "nosniff");
            // Not no-referrer: under it a browser sends "Origin: null" with the console's own forms.
            out.set("Referrer-Policy", "same-origin");
            out.set("Cache-Control", "no-store");
            out.set("Cross-Origin-Opener-Policy", "same-origin");
            out.set("Cross-Origin-Resource-Policy", "same-origin");
            Headers in = ex.getRequestHeaders();
            if (!access.isOwnHost(in.getFirst("Host"))) {
                send(ex, 403, pages.error(403, "this console answers to its own address only (127.0.0.1 or localhost)"));
                return;
            }
            String method = ex.getRequestMethod();
            String path = ex.getRequestURI().getRawPath();
            Map<String, String> query = parse(ex.getRequestURI().getRawQuery());
            if (path.equals("/static/console.css") && method.equals("GET")) {
                css(ex);
                return;
            }
            if (method.equals("GET") && access.isToken(query.get("token"))) {
                // The token leaves the address bar (and the history) at once; the cookie carries it from here.
                out.add("Set-Cookie", access.cookie());
                // Never "//host/…": that would send the browser to another site.
                redirect(ex, path.startsWith("//") ? "/" : path);
                return;
            }
            if (!access.isAuthenticated(in)) {
                send(ex, 401, pages.error(401, "open the address the console printed when it started "
                        + "(it carries the access token), or send Authorization: Bearer <token>"));
                return;
            }
            if (method.equals("POST")) {
                post(ex, path);
            } else if (method.equals("GET") || method.equals("HEAD")) {
                get(ex, path, query);
            } else {
                out.set("Allow", "GET, POST");
                send(ex, 405, pages.error(405, method + " is not allowed here"));
            }
        } catch (BadRequest e) {
            sendQuietly(ex, e.status, pages.error(e.status, e.getMessage()));
        } catch (CliException | InvalidKeyException | MalformedJsonException | IllegalArgumentException
                | DateTimeException e) {
            sendQuietly(ex, 400, pages.error(400, clean(e.getMessage())));
        } catch (StoreUnavailableException e) {
            sendQuietly(ex, 503, pages.error(503, clean(e.getMessage())));
        } catch (RuntimeException e) {
            sendQuietly(ex, 500, pages.error(500, "failed: " + clean(e.toString())));
        } finally {
            ex.close();
        }
    }

    private void get(HttpExchange ex, String path, Map<String, String> q) {
        switch (path) {
            case "/" -> send(ex, 200, overview());
            case "/records" -> {
                RecordStatus status = q.get("status") == null ? null : status(q.get("status"));
                List<KeyedSummary> rows = db.admin.listKeyed(status, Duration.ZERO, LIMIT);
                send(ex, 200, pages.records(status == null ? "Records" : "Records " + ConsolePages.label(status),
                        "/records", rows(rows), rows.size() == LIMIT, "no live record", now()));
            }
            case "/stuck" -> {
                List<KeyedSummary> stuck = stuck();
                send(ex, 200, pages.records("Stuck keys", "/stuck", rows(stuck), stuck.size() == LIMIT,
                        "no key is in progress past its lease", now()));
            }
            case "/record" -> {
                RecordRefs.Ref ref = ref(q.get("ref"));
                boolean showKey = "1".equals(q.get("key"));
                if (showKey && !config.revealKeys()) {
                    throw new BadRequest(403, "raw keys are not shown: start the console with --reveal-keys to allow it");
                }
                IdempotencyRecord r = live(ref);
                send(ex, 200, pages.record(r, q.get("ref"), showKey ? ref.key() : null, "1".equals(q.get("body")), now()));
            }
            case "/release" -> {
                RecordRefs.Ref ref = ref(q.get("ref"));
                IdempotencyKey k = IdempotencyKey.of(ref.scope(), ref.key());
                Release.Target target = Release.find(db.admin, ref.scope(), ref.key());
                if (target instanceof Release.Stuck stuck) {
                    send(ex, 200, pages.releaseConfirm(stuck.record(), q.get("ref"), now()));
                } else {
                    send(ex, 409, pages.message("Nothing to release", "/stuck", unchanged(k, target, 0), false));
                }
            }
            case "/keys" -> send(ex, 200, pages.keys(List.of(), List.of(), Map.of()));
            default -> throw new BadRequest(404, "no such page: " + path);
        }
    }

    private void post(HttpExchange ex, String path) {
        Headers in = ex.getRequestHeaders();
        if (!access.isSameOrigin(in)) {
            throw new BadRequest(403, "refused: the form was not sent from this console's own pages");
        }
        String type = in.getFirst("Content-Type");
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/x-www-form-urlencoded")) {
            throw new BadRequest(415, "a form is sent as application/x-www-form-urlencoded");
        }
        Map<String, String> form = parse(body(ex));
        if (!access.isCsrf(form.get("csrf"))) {
            throw new BadRequest(403, "refused: the form carries no valid CSRF token; reload the page and send it again");
        }
        switch (path) {
            case "/lookup" -> {
                String scope = required(form, "scope");
                String key = required(form, "key");
                IdempotencyKey.of(scope, key); // a malformed key is bad input, before the store is asked
                redirect(ex, "/record?ref=" + refs.seal(scope, key));
            }
            case "/release" -> release(ex, form);
            case "/keys/lint" -> {
                List<String> keys = required(form, "keys").lines().filter(l -> !l.isEmpty()).toList();
                if (keys.size() > MAX_LINT_KEYS) {
                    throw new BadRequest(400, "at most " + MAX_LINT_KEYS + " keys at once, but there were " + keys.size());
                }
                List<LintReport> reports = keys.stream().map(KeyLint::lint).toList();
                send(ex, 200, pages.keys(reports, List.of(), form));
            }
            case "/keys/generate" -> send(ex, 200, pages.keys(List.of(), List.of(generate(form)), form));
            default -> throw new BadRequest(404, "no such action: " + path);
        }
    }

    // ---------------------------------------------------------------- actions

    private void release(HttpExchange ex, Map<String, String> form) {
        RecordRefs.Ref ref = ref(form.get("ref"));
        IdempotencyKey k = IdempotencyKey.of(ref.scope(), ref.key());
        int attempt;
        try {
            attempt = Integer.parseInt(required(form, "attempt"));
        } catch (NumberFormatException e) {
            throw new BadRequest(400, "attempt must be a number, but was \"" + form.get("attempt") + "\"");
        }
        if (!Release.isConfirmation(k, form.get("confirm"))) {
            send(ex, 400, pages.message("Not released", "/stuck",
                    "not confirmed: the answer was not the key's digest (" + k.digest() + "); nothing changed", false));
            return;
        }
        if (!Release.confirmed(db.admin, ref.scope(), ref.key(), attempt)) {
            Release.Target now = Release.find(db.admin, ref.scope(), ref.key());
            send(ex, 409, pages.message("Not released", "/stuck", unchanged(k, now, attempt), false));
            return;
        }
        send(ex, 200, pages.message("Released", "/stuck", Release.released(k, attempt), true));
    }

    /** Why nothing changed: the record is gone, not in progress, or another attempt than {@code attempt}. */
    private String unchanged(IdempotencyKey k, Release.Target target, int attempt) {
        return target instanceof Release.NotInProgress n ? Release.notInProgress(k, n.status())
                : target instanceof Release.Absent ? Release.absent(k, db.store.table())
                : Release.changed(attempt);
    }

    private static String generate(Map<String, String> form) {
        String type = form.getOrDefault("type", "v7");
        return switch (type) {
            case "v7" -> IdempotencyKeys.uuidV7();
            case "v4" -> IdempotencyKeys.uuidV4();
            case "intent" -> KeygenCommand.intent(required(form, "principal"), required(form, "operation"),
                    blankToNull(form.get("business-date")), required(form, "payload").getBytes(StandardCharsets.UTF_8), true);
            default -> throw new BadRequest(400, "type must be v7, v4 or intent, but was \"" + type + "\"");
        };
    }

    private String overview() {
        Stats stats = db.admin.stats();
        List<KeyedSummary> sample = db.admin.listKeyed(null, Duration.ZERO, LIMIT);
        Map<String, Map<RecordStatus, Long>> byScope = new TreeMap<>();
        Map<String, Long> byRoute = new TreeMap<>();
        long[] expiry = new long[4];
        Instant now = now();
        long stuck = 0;
        for (KeyedSummary s : sample) {
            var r = s.summary();
            byScope.computeIfAbsent(r.scope(), x -> new EnumMap<>(RecordStatus.class)).merge(r.status(), 1L, Long::sum);
            byRoute.merge(route(r.scope()), 1L, Long::sum);
            Duration left = Duration.between(now, r.expiresAt());
            expiry[left.compareTo(Duration.ofHours(1)) < 0 ? 0 : left.compareTo(Duration.ofDays(1)) < 0 ? 1
                    : left.compareTo(Duration.ofDays(7)) < 0 ? 2 : 3]++;
            if (isStuck(s, now)) {
                stuck++;
            }
        }
        List<ConsolePages.Bar> byExpiry = List.of(new ConsolePages.Bar("<1h", expiry[0], "expiry"),
                new ConsolePages.Bar("<24h", expiry[1], "expiry"), new ConsolePages.Bar("<7d", expiry[2], "expiry"),
                new ConsolePages.Bar("later", expiry[3], "expiry"));
        return pages.overview(stats, new ConsolePages.Sample(sample.size(), sample.size() == LIMIT, byScope, byRoute,
                byExpiry, stuck));
    }

    /** The route of an HTTP scope ({@code principal|METHOD /pattern}); other scopes are their own route. */
    static String route(String scope) {
        int bar = scope.lastIndexOf('|');
        return bar < 0 ? scope : scope.substring(bar + 1);
    }

    private List<KeyedSummary> stuck() {
        Instant now = now();
        return db.admin.listKeyed(RecordStatus.IN_PROGRESS, Duration.ZERO, LIMIT).stream()
                .filter(s -> isStuck(s, now)).toList();
    }

    private static boolean isStuck(KeyedSummary s, Instant now) {
        return s.summary().status() == RecordStatus.IN_PROGRESS && s.summary().leaseExpiresAt().isBefore(now);
    }

    private List<ConsolePages.Row> rows(List<KeyedSummary> summaries) {
        List<ConsolePages.Row> rows = new ArrayList<>(summaries.size());
        for (KeyedSummary s : summaries) {
            rows.add(new ConsolePages.Row(s.summary(), refs.seal(s.summary().scope(), s.key())));
        }
        return rows;
    }

    private IdempotencyRecord live(RecordRefs.Ref ref) {
        Optional<IdempotencyRecord> r = db.admin.inspect(ref.scope(), ref.key());
        if (r.isEmpty()) {
            throw new BadRequest(404, "no live record for scope \"" + ref.scope() + "\", key digest "
                    + IdempotencyKey.of(ref.scope(), ref.key()).digest() + " (never stored, expired or purged)");
        }
        return r.get();
    }

    private RecordRefs.Ref ref(String value) {
        return refs.open(value).orElseThrow(() -> new BadRequest(404,
                "unknown record reference: links from an earlier run of the console do not open; start from a listing"));
    }

    private Instant now() {
        return config.clock().instant();
    }

    // ---------------------------------------------------------------- HTTP

    private static RecordStatus status(String value) {
        try {
            return RecordStatus.valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new BadRequest(400, "status must be IN_PROGRESS, COMPLETED or FAILED, but was \"" + value + "\"");
        }
    }

    private static String required(Map<String, String> form, String name) {
        String value = form.get(name);
        if (value == null || value.isBlank()) {
            throw new BadRequest(400, name + " is required");
        }
        return value;
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value.strip();
    }

    private static String body(HttpExchange ex) {
        try (InputStream in = ex.getRequestBody()) {
            byte[] bytes = in.readNBytes(MAX_FORM_BYTES + 1);
            if (bytes.length > MAX_FORM_BYTES) {
                throw new BadRequest(413, "a form of at most " + MAX_FORM_BYTES + " bytes");
            }
            return new String(bytes, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code a=1&b=2}, as a query or a form; a name given twice keeps its first value. */
    static Map<String, String> parse(String raw) {
        Map<String, String> values = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return values;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            values.putIfAbsent(name, value);
        }
        return values;
    }

    private void css(HttpExchange ex) {
        try (InputStream in = ConsoleServer.class.getResourceAsStream("console.css")) {
            byte[] css = in.readAllBytes();
            ex.getResponseHeaders().set("Content-Type", "text/css; charset=utf-8");
            ex.getResponseHeaders().set("Cache-Control", "max-age=3600");
            ex.sendResponseHeaders(200, css.length);
            ex.getResponseBody().write(css);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void redirect(HttpExchange ex, String location) {
        try {
            ex.getResponseHeaders().set("Location", location);
            ex.sendResponseHeaders(303, -1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void send(HttpExchange ex, int status, String html) {
        try {
            byte[] bytes = html.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
            boolean head = ex.getRequestMethod().equals("HEAD");
            ex.sendResponseHeaders(status, head ? -1 : bytes.length);
            if (!head) {
                ex.getResponseBody().write(bytes);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An error page, unless the answer is already on its way (then the connection is closed as it is). */
    private static void sendQuietly(HttpExchange ex, int status, String html) {
        if (ex.getResponseCode() != -1) {
            return;
        }
        try {
            send(ex, status, html);
        } catch (UncheckedIOException e) {
            // the browser went away
        }
    }

    private String clean(String message) {
        return redactor.clean(Redactor.oneLine(String.valueOf(message)));
    }

    /** A request the console answers with an error page of its own status. */
    private static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private final int status;

        BadRequest(int status, String message) {
            super(message);
            this.status = status;
        }
    }
}
