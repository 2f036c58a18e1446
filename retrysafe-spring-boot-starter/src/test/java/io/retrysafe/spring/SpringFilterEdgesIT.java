package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.Problem;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.sql.Connection;
import java.sql.Statement;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.multipart.MultipartFile;

/**
 * The filter where Spring and Tomcat meet it, as a client sees it on a real Tomcat behind Spring
 * Security's firewall, with the real PostgreSQL. Every refusal on a protected route is a RetrySafe
 * problem document: keys the firewall or the container reject before the filter sees them, store
 * failures (which must not show driver text, SQL, a table or a host), and a handler's {@code sendError}
 * message (which Spring Boot hides by default). Uploads reach a {@code MultipartFile} parameter intact.
 */
@SpringBootTest(classes = SpringFilterEdgesIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/payments",
                "retrysafe.http.routes[1].method=POST",
                "retrysafe.http.routes[1].pattern=/refusals",
                "retrysafe.http.routes[2].method=POST",
                "retrysafe.http.routes[2].pattern=/uploads",
                "retrysafe.http.routes[3].method=PUT",
                "retrysafe.http.routes[3].pattern=/limits",
                "retrysafe.store.initialize-schema=true",
        })
@Tag("spring-security")
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class SpringFilterEdgesIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String RECORDS = "rs_refusals_records_" + SUFFIX;
    /** Said by the handler in its sendError message: never for the client while Boot hides messages. */
    static final String HANDLER_SECRET = "card declined by ledger-db-7.internal";

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        TestPostgres.register(registry, RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(Payments.class)
    static class App {
        /** Anyone may call; the firewall (StrictHttpFirewall, Spring Security's default) still applies. */
        @Bean
        SecurityFilterChain api(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(a -> a.anyRequest().permitAll()).csrf(c -> c.disable()).build();
        }
    }

    @RestController
    static class Payments {
        static final AtomicInteger RUNS = new AtomicInteger();

        @PostMapping("/payments")
        Map<String, Object> pay() {
            return Map.of("run", RUNS.incrementAndGet());
        }

        @PostMapping("/refusals")
        void refuse(HttpServletResponse response) throws IOException {
            RUNS.incrementAndGet();
            response.sendError(400, HANDLER_SECRET);
        }

        @PostMapping("/uploads")
        Map<String, Object> upload(@RequestParam String note, @RequestParam MultipartFile file) throws IOException {
            return Map.of("note", note, "file", file.getOriginalFilename(), "size", file.getSize(),
                    "sha256", sha256(file.getBytes()), "run", RUNS.incrementAndGet());
        }

        /** A PUT's form reaches {@code @RequestParam} through Spring's FormContentFilter, before the filter. */
        @PutMapping("/limits")
        Map<String, Object> limit(@RequestParam String account, @RequestParam int amount) {
            return Map.of("account", account, "amount", amount, "run", RUNS.incrementAndGet());
        }

        @PostMapping("/orders/{number}")
        @Idempotent(key = "#number")
        Map<String, Object> order(@PathVariable String number) {
            return Map.of("order", number, "run", RUNS.incrementAndGet());
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    JdbcTemplate jdbc;

    @AfterAll
    static void dropTables() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @Test
    void aKeyWithLatin1BytesIsTheInvalidKeyProblem() throws Exception {
        assertInvalidKey(post("/payments", "caf\u00e9-" + UUID.randomUUID()));
    }

    @Test
    void aKeyWithUtf8BytesIsTheInvalidKeyProblem() throws Exception {
        String utf8AsLatin1 = new String(("k\u00e9y-\u20ac-" + UUID.randomUUID()).getBytes(UTF_8), ISO_8859_1);
        assertInvalidKey(post("/payments", utf8AsLatin1));
    }

    /** Tomcat's parser refuses these itself, before any filter: which header broke is not known then. */
    @ParameterizedTest
    @ValueSource(strings = {"abc\u0001def", "abc\u0000def", "abc\u007fdef", "abc\u001bdef"})
    void aKeyWithAControlCharacterIsAProblemNotTheContainersPage(String key) throws Exception {
        int runs = Payments.RUNS.get();
        RawHttp.Response response = post("/payments", key);

        assertThat(response.status()).isEqualTo(400);
        assertProblem(response, Problem.REQUEST_REJECTED.type());
        assertThat(Payments.RUNS.get()).as("the handler did not run").isEqualTo(runs);
    }

    @Test
    void aPathTheFirewallRejectsOnAProtectedRouteIsAProblem() throws Exception {
        RawHttp.Response response = post("/payments;x=1", UUID.randomUUID().toString());

        assertThat(response.status()).isEqualTo(400);
        assertProblem(response, Problem.REQUEST_REJECTED.type());
    }

    @Test
    void unprotectedRoutesKeepTheFirewallsOwnAnswer() throws Exception {
        RawHttp.Response response = post("/elsewhere;x=1", UUID.randomUUID().toString());

        assertThat(response.status()).isEqualTo(400);
        assertThat(response.header("Content-Type")).doesNotStartWith(Problem.CONTENT_TYPE);
    }

    @Test
    void aHandlersSendErrorMessageIsNeitherShownNorReplayed() throws Exception {
        String key = UUID.randomUUID().toString();
        RawHttp.Response first = post("/refusals", key);
        RawHttp.Response replay = post("/refusals", key);

        assertThat(first.status()).isEqualTo(400);
        assertThat(replay.status()).isEqualTo(400);
        assertThat(replay.header("Idempotent-Replayed")).isEqualTo("true");
        for (RawHttp.Response r : new RawHttp.Response[] {first, replay}) {
            assertProblem(r, "about:blank");
            assertThat(r.text()).doesNotContain(HANDLER_SECRET).contains("\"title\":\"Bad Request\"");
        }
    }

    @Test
    void aStoreFailureShowsNoDriverTextToTheFilterOrAnIdempotentMethodsClient() throws Exception {
        String hidden = RECORDS + "_away";
        jdbc.execute("ALTER TABLE " + RECORDS + " RENAME TO " + hidden);
        RawHttp.Response filtered;
        RawHttp.Response method;
        try {
            filtered = post("/payments", UUID.randomUUID().toString());
            method = post("/orders/o-" + UUID.randomUUID(), "unused");
        } finally {
            jdbc.execute("ALTER TABLE " + hidden + " RENAME TO " + RECORDS);
        }

        for (RawHttp.Response r : new RawHttp.Response[] {filtered, method}) {
            assertThat(r.status()).as("%s", r).isEqualTo(503);
            assertThat(r.header("Retry-After")).isNotNull();
            assertProblem(r, Problem.STORE_UNAVAILABLE.type());
            assertThat(r.text().toLowerCase()).doesNotContain(RECORDS, "sqlstate", "relation", "select", "insert",
                    "jdbc", "postgres", "127.0.0.1", "exception");
        }
    }

    @Test
    void anUploadReachesItsMultipartFileParameterIntactAndARetryWithAnotherBoundaryIsReplayed() throws Exception {
        String key = UUID.randomUUID().toString();
        byte[] file = new byte[20_000];
        new Random(7).nextBytes(file);
        int runs = Payments.RUNS.get();

        RawHttp.Response first = upload(key, "first-boundary", file);
        RawHttp.Response retry = upload(key, "boundary-drawn-again", file);
        byte[] otherFile = file.clone();
        otherFile[19_999] ^= 1;
        RawHttp.Response other = upload(key, "first-boundary", otherFile);

        assertThat(first.status()).as("%s", first).isEqualTo(200);
        assertThat(first.text()).contains("\"note\":\"monthly\"", "\"file\":\"ledger.bin\"", "\"size\":20000",
                "\"sha256\":\"" + sha256(file) + "\"");
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(retry.text()).isEqualTo(first.text());
        assertThat(other.status()).isEqualTo(422);
        assertProblem(other, Problem.KEY_REUSED.type());
        assertThat(Payments.RUNS.get()).as("the handler ran once").isEqualTo(runs + 1);
    }

    @Test
    void aPutFormParsedBeforeTheFilterIsFingerprintedByItsFields() throws Exception {
        String key = UUID.randomUUID().toString();
        int runs = Payments.RUNS.get();

        RawHttp.Response first = putForm(key, "account=A-1&amount=100");
        RawHttp.Response retry = putForm(key, "amount=100&account=A-1");
        RawHttp.Response other = putForm(key, "account=A-1&amount=900");

        assertThat(first.status()).as("%s", first).isEqualTo(200);
        assertThat(first.text()).contains("\"account\":\"A-1\"", "\"amount\":100");
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(retry.text()).isEqualTo(first.text());
        assertProblem(other, Problem.KEY_REUSED.type());
        assertThat(Payments.RUNS.get()).as("the handler ran once").isEqualTo(runs + 1);
    }

    private RawHttp.Response putForm(String key, String form) throws IOException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-User", "alice");
        headers.put(HttpIdempotency.HEADER, key);
        headers.put("Content-Type", "application/x-www-form-urlencoded");
        return RawHttp.exchange(port, RawHttp.request("PUT", "/limits", headers, form.getBytes(UTF_8)));
    }

    private RawHttp.Response upload(String key, String boundary, byte[] file) throws IOException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-User", "alice");
        headers.put(HttpIdempotency.HEADER, key);
        headers.put("Content-Type", "multipart/form-data; boundary=" + boundary);
        return RawHttp.exchange(port, RawHttp.request("POST", "/uploads", headers,
                RawHttp.multipart(boundary, "note", "monthly", "file", "ledger.bin", file)));
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private RawHttp.Response post(String target, String key) throws IOException {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("X-User", "alice");
        headers.put(HttpIdempotency.HEADER, key);
        headers.put("Content-Type", "application/json");
        return RawHttp.exchange(port, RawHttp.request("POST", target, headers, "{}".getBytes(UTF_8)));
    }

    private static void assertInvalidKey(RawHttp.Response response) {
        assertThat(response.status()).as("%s", response).isEqualTo(400);
        assertProblem(response, Problem.INVALID_KEY.type());
        assertThat(response.text()).contains("\"rule\":\"not_printable_ascii\"");
    }

    /** A problem document of the type (or type prefix), with nothing of the server's insides in it. */
    private static void assertProblem(RawHttp.Response response, String type) {
        assertThat(response.header("Content-Type")).as("%s", response).startsWith(Problem.CONTENT_TYPE);
        assertThat(response.text()).as("%s", response).contains("\"type\":\"" + type)
                .doesNotContain("<html", "trace", "\tat ", "Exception", "jdbc:", "127.0.0.1", "Tomcat");
    }
}
