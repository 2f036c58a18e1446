package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.Part;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Requests whose shape the filter must see through, on a real Tomcat with the real PostgreSQL store:
 * paths spelled so that a raw match would miss them, multipart uploads (read by the filter for the
 * fingerprint, then by the handler through {@code getParts()}), and Servlet 6.1 redirects.
 */
class RetrySafeFilterRequestShapesIT {
    private static final String TABLE = "rs_shapes_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    @TempDir
    static Path baseDir;
    private static EmbeddedTomcat tomcat;
    private static int port;

    private String testId;
    private String key;

    @BeforeAll
    static void start() throws Exception {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(TABLE).build();
        store.createSchema();
        RetrySafe engine = RetrySafe.builder(store).name("shapes-it").build();
        HttpIdempotency config = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/payments").build())
                .route(IdempotentRoute.of("POST", "/uploads").build())
                .route(IdempotentRoute.of("POST", "/redirects").build())
                .scope(ScopeResolver.header("X-User"))
                .maxRequestBytes(64 * 1024)
                .build();
        tomcat = EmbeddedTomcat.start(baseDir, context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.servlet(context, "uploads", new UploadServlet(), "/uploads")
                    .setMultipartConfigElement(new MultipartConfigElement(""));
            EmbeddedTomcat.servlet(context, "redirects", new RedirectServlet(), "/redirects");
            EmbeddedTomcat.servlet(context, "payments", new PaymentServlet(), "/*");
        });
        port = tomcat.uri("/").getPort();
    }

    @AfterAll
    static void stop() throws Exception {
        if (tomcat != null) {
            tomcat.close();
        }
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + TABLE);
        }
    }

    @BeforeEach
    void newIds() {
        testId = UUID.randomUUID().toString();
        key = UUID.randomUUID().toString();
    }

    // ------------------------------------------------------------------ paths

    /** Tomcat hands each of these to the handler of /payments: the key must be required on each. */
    @ParameterizedTest
    @ValueSource(strings = {"/p%61yments", "/payments;x=1", "/./payments", "//payments", "/other/../payments",
            "/%70ayments;v=2/"})
    void aPathSpelledOtherwiseStillRequiresTheKey(String target) throws Exception {
        RawHttp.Response response = post(target, null, "application/json", "{\"amount\":1}".getBytes(UTF_8));

        assertThat(response.status()).as("%s", response).isEqualTo(400);
        assertThat(response.header("Content-Type")).startsWith(Problem.CONTENT_TYPE);
        assertThat(response.text()).contains("\"type\":\"" + Problem.MISSING_KEY.type() + "\"");
        assertThat(runs()).as("the handler did not run").isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"/p%61yments", "/payments;x=1", "/./payments", "//payments"})
    void aPathSpelledOtherwiseIsTheSameIntent(String target) throws Exception {
        byte[] body = "{\"amount\":1}".getBytes(UTF_8);
        RawHttp.Response first = post(target, key, "application/json", body);
        RawHttp.Response retry = post("/payments", key, "application/json", body);

        assertThat(first.status()).as("%s", first).isEqualTo(201);
        assertThat(retry.status()).isEqualTo(201);
        assertThat(retry.header(RetrySafeFilter.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(runs()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ multipart

    @Test
    void theHandlerGetsTheUploadIntactAfterTheFilterReadIt() throws Exception {
        byte[] file = fileContent(5000);
        RawHttp.Response response = upload(key, "boundary-one", file);

        assertThat(response.status()).as("%s", response).isEqualTo(201);
        assertThat(response.text()).isEqualTo("note=" + sha256("first upload".getBytes(UTF_8)) + ";"
                + "file(report.bin,application/octet-stream)=" + sha256(file) + ";");
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aRetryWithAnotherBoundaryIsReplayed() throws Exception {
        byte[] file = fileContent(3000);
        RawHttp.Response first = upload(key, "boundary-one", file);
        RawHttp.Response retry = upload(key, "a-new-boundary-drawn-for-the-retry", file);

        assertThat(first.status()).isEqualTo(201);
        assertThat(retry.status()).as("%s", retry).isEqualTo(201);
        assertThat(retry.header(RetrySafeFilter.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(retry.text()).isEqualTo(first.text());
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void anotherFileUnderTheSameKeyIsRefused() throws Exception {
        byte[] file = fileContent(3000);
        byte[] other = file.clone();
        other[1234] ^= 1;
        RawHttp.Response first = upload(key, "boundary-one", file);
        RawHttp.Response reused = upload(key, "boundary-one", other);

        assertThat(first.status()).isEqualTo(201);
        assertThat(reused.status()).isEqualTo(422);
        assertThat(reused.text()).contains("\"type\":\"" + Problem.KEY_REUSED.type() + "\"");
        assertThat(runs()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ redirects

    @ParameterizedTest
    @ValueSource(strings = {"three", "status", "clear"})
    void servlet61RedirectsAreHeldBackAndReplayed(String form) throws Exception {
        RawHttp.Response first = post("/redirects?form=" + form, key, "application/json", "{}".getBytes(UTF_8));
        RawHttp.Response retry = post("/redirects?form=" + form, key, "application/json", "{}".getBytes(UTF_8));

        int status = form.equals("clear") ? 302 : 303;
        assertThat(first.status()).as("%s", first).isEqualTo(status);
        assertThat(first.header("Location")).endsWith("/payments/42");
        assertThat(first.text()).doesNotContain("draft");
        assertThat(retry.status()).as("%s", retry).isEqualTo(status);
        assertThat(retry.header("Location")).isEqualTo(first.header("Location"));
        assertThat(retry.header(RetrySafeFilter.REPLAYED_HEADER)).isEqualTo("true");
        assertThat(retry.text()).as("the replay is the redirect the client got, not the handler's draft")
                .isEqualTo(first.text());
        assertThat(runs()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ helpers

    private int runs() {
        AtomicInteger n = RUNS.get(testId);
        return n == null ? 0 : n.get();
    }

    private static void countRun(HttpServletRequest req) {
        RUNS.computeIfAbsent(req.getHeader("X-Test"), t -> new AtomicInteger()).incrementAndGet();
    }

    private RawHttp.Response post(String target, String idempotencyKey, String contentType, byte[] body)
            throws IOException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-User", "alice");
        headers.put("X-Test", testId);
        if (idempotencyKey != null) {
            headers.put(HttpIdempotency.HEADER, idempotencyKey);
        }
        headers.put("Content-Type", contentType);
        return RawHttp.exchange(port, RawHttp.request("POST", target, headers, body));
    }

    private RawHttp.Response upload(String idempotencyKey, String boundary, byte[] file) throws IOException {
        return post("/uploads", idempotencyKey, "multipart/form-data; boundary=" + boundary,
                RawHttp.multipart(boundary, "note", "first upload", "file", "report.bin", file));
    }

    /** Bytes of every value, CR and LF included, so that a boundary-like line could not survive by luck. */
    private static byte[] fileContent(int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + 7);
        }
        return b;
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Answers what it received: each part's name, file name, content type and the SHA-256 of its content. */
    static final class UploadServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException,
                jakarta.servlet.ServletException {
            countRun(req);
            StringBuilder seen = new StringBuilder();
            for (Part part : req.getParts()) {
                seen.append(part.getName());
                if (part.getSubmittedFileName() != null) {
                    seen.append('(').append(part.getSubmittedFileName()).append(',').append(part.getContentType())
                            .append(')');
                }
                try (InputStream in = part.getInputStream()) {
                    seen.append('=').append(sha256(in.readAllBytes())).append(';');
                }
            }
            resp.setStatus(201);
            resp.setContentType("text/plain");
            resp.getOutputStream().write(seen.toString().getBytes(UTF_8));
        }
    }

    /** A Servlet 6.1 redirect after a draft body: {@code form} picks the overload. */
    static final class RedirectServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            countRun(req);
            resp.setContentType("text/plain");
            resp.getWriter().write("draft");
            switch (req.getParameter("form")) {
                case "three" -> resp.sendRedirect("/payments/42", 303, true);
                case "status" -> resp.sendRedirect("/payments/42", 303);
                default -> resp.sendRedirect("/payments/42", true);
            }
        }
    }

    static final class PaymentServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            countRun(req);
            req.getInputStream().readAllBytes();
            resp.setStatus(201);
            resp.setContentType("application/json");
            resp.getOutputStream().write("{\"id\":42}".getBytes(UTF_8));
        }
    }
}
