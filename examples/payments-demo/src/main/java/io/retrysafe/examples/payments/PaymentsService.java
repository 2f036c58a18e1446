package io.retrysafe.examples.payments;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * A small payments API on the JDK's HTTP server, protected by RetrySafe in transactional mode: the
 * key, the balance update, the payment, the ledger entry and the stored response commit in one
 * PostgreSQL transaction.
 *
 * <p>{@code POST /payments} with {@code Idempotency-Key} and {@code {"account":"acc-1","amount":100}};
 * {@code GET /payments/{id}}; {@code GET /accounts/{id}}. The caller is named by {@code X-User}, a
 * stand-in for real authentication: keys are scoped by it, so one user's key never replays to another.
 */
public final class PaymentsService implements AutoCloseable {
    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([A-Za-z0-9-]{1,64})\"");
    private static final Pattern AMOUNT = Pattern.compile("\"amount\"\\s*:\\s*(-?\\d{1,12})");
    private static final int MAX_BODY = 64 * 1024;

    private final DataSource dataSource;
    private final TransactionalRetrySafe payments;
    private final HttpServer server;

    public PaymentsService(DataSource dataSource, int port) throws IOException {
        this.dataSource = dataSource;
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
        store.createSchema();
        createBusinessTables();
        this.payments = TransactionalRetrySafe.of(RetrySafe.builder(store).name("payments-demo").build());
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.createContext("/payments", this::payments);
        server.createContext("/accounts", this::accounts);
    }

    public PaymentsService start() {
        server.start();
        return this;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }

    private void createBusinessTables() {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS demo_account (id text PRIMARY KEY, balance bigint NOT NULL)");
            st.execute("CREATE TABLE IF NOT EXISTS demo_payment (id uuid PRIMARY KEY, account text NOT NULL"
                    + " REFERENCES demo_account, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
            st.execute("CREATE TABLE IF NOT EXISTS demo_ledger (id bigserial PRIMARY KEY, payment uuid NOT NULL"
                    + " REFERENCES demo_payment, account text NOT NULL, delta bigint NOT NULL)");
            st.execute("INSERT INTO demo_account VALUES ('acc-1', 100000), ('acc-2', 100000), ('acc-3', 500)"
                    + " ON CONFLICT DO NOTHING");
        } catch (SQLException e) {
            throw new IllegalStateException("could not create the demo tables: " + e.getMessage(), e);
        }
    }

    private void payments(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (path.equals("/payments") && ex.getRequestMethod().equals("POST")) {
                createPayment(ex);
            } else if (path.startsWith("/payments/") && ex.getRequestMethod().equals("GET")) {
                getPayment(ex, path.substring("/payments/".length()));
            } else {
                problem(ex, 404, "not-found", "Not Found", "no route for " + ex.getRequestMethod() + " " + path);
            }
        }
    }

    private void createPayment(HttpExchange ex) throws IOException {
        String user = ex.getRequestHeaders().getFirst("X-User");
        if (user == null || user.isBlank()) {
            problem(ex, 401, "unauthenticated", "Unauthenticated", "send X-User: <your user name>");
            return;
        }
        IdempotencyKey key;
        try {
            key = KeyRules.DEFAULT.key(user + ":POST /payments",
                    KeyRules.DEFAULT.parseHeader(ex.getRequestHeaders().get("Idempotency-Key")));
        } catch (InvalidKeyException e) {
            problem(ex, 400, e.rule() == InvalidKeyException.Rule.MISSING ? "missing-key" : "invalid-key",
                    "Bad Idempotency-Key", e.getMessage());
            return;
        }
        byte[] body = readBody(ex.getRequestBody());
        if (body == null) {
            problem(ex, 413, "body-too-large", "Request body too large", "at most " + MAX_BODY + " bytes");
            return;
        }
        // The key's scope names the route already: the body's bytes are what a retry must repeat.
        Fingerprint fingerprint = Fingerprint.sha256(body);
        Outcome<StoredResponse> outcome;
        try (Connection c = dataSource.getConnection()) {
            outcome = payments.execute(c, key, fingerprint, ResponseCodec.identity(), attempt -> pay(c, body));
        } catch (SQLException e) {
            problem(ex, 503, "store-unavailable", "Service Unavailable", "database unavailable");
            return;
        }
        if (outcome instanceof Outcome.Executed<StoredResponse> e) {
            send(ex, e.value(), false);
        } else if (outcome instanceof Outcome.Replayed<StoredResponse> r) {
            send(ex, r.value(), true);
        } else if (outcome instanceof Outcome.InProgress<StoredResponse> p) {
            ex.getResponseHeaders().set("Retry-After", Long.toString(Math.max(1, p.retryAfter().toSeconds())));
            problem(ex, 409, "request-in-progress", "Request in progress",
                    "a request with this Idempotency-Key is still being processed; retry later");
        } else if (outcome instanceof Outcome.FingerprintMismatch<StoredResponse>) {
            problem(ex, 422, "key-reused", "Idempotency-Key reused",
                    "this Idempotency-Key was already used with a different request");
        } else {
            ex.getResponseHeaders().set("Retry-After", "1");
            problem(ex, 503, "store-unavailable", "Service Unavailable", "the idempotency store is unavailable");
        }
    }

    /** The business transaction: lock the account, check and move the money, record payment and ledger. */
    private static StoredResponse pay(Connection c, byte[] body) throws SQLException {
        String json = new String(body, StandardCharsets.UTF_8);
        Matcher account = ACCOUNT.matcher(json);
        Matcher amount = AMOUNT.matcher(json);
        if (!account.find() || !amount.find() || Long.parseLong(amount.group(1)) <= 0) {
            return json(400, "{\"type\":\"/problems/invalid-payment\",\"title\":\"Invalid payment\","
                    + "\"status\":400,\"detail\":\"send {\\\"account\\\":\\\"acc-1\\\",\\\"amount\\\":100}\"}", true);
        }
        long value = Long.parseLong(amount.group(1));
        long balance;
        try (PreparedStatement ps = c.prepareStatement("SELECT balance FROM demo_account WHERE id = ? FOR UPDATE")) {
            ps.setString(1, account.group(1));
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return json(404, "{\"type\":\"/problems/unknown-account\",\"title\":\"Unknown account\","
                            + "\"status\":404}", true);
                }
                balance = rs.getLong(1);
            }
        }
        if (balance < value) {
            // A refusal is an answer too: stored, and replayed to every retry of this intent.
            return json(402, "{\"type\":\"/problems/insufficient-funds\",\"title\":\"Insufficient funds\","
                    + "\"status\":402,\"balance\":" + balance + "}", true);
        }
        UUID id = UUID.randomUUID();
        try (PreparedStatement ps = c.prepareStatement("UPDATE demo_account SET balance = balance - ? WHERE id = ?")) {
            ps.setLong(1, value);
            ps.setString(2, account.group(1));
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO demo_payment (id, account, amount) VALUES (?, ?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, account.group(1));
            ps.setLong(3, value);
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO demo_ledger (payment, account, delta) VALUES (?, ?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, account.group(1));
            ps.setLong(3, -value);
            ps.executeUpdate();
        }
        return json(201, "{\"id\":\"" + id + "\",\"account\":\"" + account.group(1) + "\",\"amount\":" + value
                + ",\"balance\":" + (balance - value) + "}", false);
    }

    private void getPayment(HttpExchange ex, String id) throws IOException {
        UUID uuid;
        try {
            uuid = UUID.fromString(id);
        } catch (IllegalArgumentException e) {
            problem(ex, 404, "not-found", "Not Found", "no payment " + id);
            return;
        }
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT account, amount FROM demo_payment WHERE id = ?")) {
            ps.setObject(1, uuid);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    problem(ex, 404, "not-found", "Not Found", "no payment " + id);
                    return;
                }
                send(ex, json(200, "{\"id\":\"" + uuid + "\",\"account\":\"" + rs.getString(1) + "\",\"amount\":"
                        + rs.getLong(2) + "}", false), false);
            }
        } catch (SQLException e) {
            problem(ex, 503, "store-unavailable", "Service Unavailable", "database unavailable");
        }
    }

    private void accounts(HttpExchange ex) throws IOException {
        try (ex) {
            String id = ex.getRequestURI().getPath().substring("/accounts".length()).replaceFirst("^/", "");
            try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "SELECT a.balance, (SELECT count(*) FROM demo_payment p WHERE p.account = a.id)"
                            + " FROM demo_account a WHERE a.id = ?")) {
                ps.setString(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        problem(ex, 404, "not-found", "Not Found", "no account " + id);
                        return;
                    }
                    send(ex, json(200, "{\"id\":\"" + id + "\",\"balance\":" + rs.getLong(1) + ",\"payments\":"
                            + rs.getLong(2) + "}", false), false);
                }
            } catch (SQLException e) {
                problem(ex, 503, "store-unavailable", "Service Unavailable", "database unavailable");
            }
        }
    }

    private static StoredResponse json(int status, String body, boolean problem) {
        return StoredResponse.of(status,
                Map.of("Content-Type", List.of(problem ? "application/problem+json" : "application/json")),
                body.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] readBody(InputStream in) throws IOException {
        byte[] body = in.readNBytes(MAX_BODY + 1);
        return body.length > MAX_BODY ? null : body;
    }

    private static void send(HttpExchange ex, StoredResponse response, boolean replayed) throws IOException {
        response.headers().forEach((name, values) -> ex.getResponseHeaders().put(name, values));
        if (replayed) {
            ex.getResponseHeaders().set("Idempotent-Replayed", "true");
        }
        byte[] body = response.body();
        ex.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private static void problem(HttpExchange ex, int status, String type, String title, String detail)
            throws IOException {
        String body = "{\"type\":\"/problems/" + type + "\",\"title\":\"" + title + "\",\"status\":" + status
                + ",\"detail\":\"" + detail.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}";
        send(ex, json(status, body, true), false);
    }
}
