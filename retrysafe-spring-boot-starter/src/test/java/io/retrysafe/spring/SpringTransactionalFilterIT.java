package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Engines;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * The starter's filter in transactional mode, as a client sees it: a Spring Boot application on a
 * real Tomcat and the real PostgreSQL, whose handler writes with a plain {@link JdbcTemplate} (no
 * {@code @Transactional}: the filter's transaction is the one bound to the thread). The key, the
 * handler's row and the stored response commit together, and the client never sees a success that
 * did not commit.
 */
@SpringBootTest(classes = SpringTransactionalFilterIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/things",
                "retrysafe.http.routes[1].method=POST",
                "retrysafe.http.routes[1].pattern=/things/later",
                "retrysafe.store.initialize-schema=true",
                // The in-flight test holds a duplicate on the key until it is seen waiting.
                "retrysafe.store.lock-timeout=30s",
        })
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class SpringTransactionalFilterIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String THINGS = "rs_filter_things_" + SUFFIX;
    static final String RECORDS = "rs_filter_records_" + SUFFIX;
    private static final String KEY = HttpIdempotency.HEADER;
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        TestPostgres.register(registry, RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(ThingsController.class)
    static class App {
        @Bean
        Probe probe() {
            return new Probe();
        }

        @Bean
        SimpleMeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        FilterRegistrationBean<OuterTransactionFilter> outerTransaction(PlatformTransactionManager transactions) {
            FilterRegistrationBean<OuterTransactionFilter> registration =
                    new FilterRegistrationBean<>(new OuterTransactionFilter(transactions));
            registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
            return registration;
        }
    }

    /**
     * An application's own filter, outside RetrySafe's: asked to ({@code X-Outer: rollback}), it runs the request in
     * a transaction of its own, which RetrySafe's filter joins, and rolls it back after the chain returns.
     */
    static class OuterTransactionFilter extends OncePerRequestFilter {
        private final PlatformTransactionManager transactions;

        OuterTransactionFilter(PlatformTransactionManager transactions) {
            this.transactions = transactions;
        }

        @Override
        protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
                throws ServletException, IOException {
            if (!"rollback".equals(request.getHeader("X-Outer"))) {
                chain.doFilter(request, response);
                return;
            }
            TransactionStatus status = transactions.getTransaction(new DefaultTransactionDefinition());
            try {
                chain.doFilter(request, response);
            } finally {
                transactions.rollback(status);
            }
        }
    }

    /** What the test sees of the handler and steers in it. */
    static class Probe {
        final AtomicInteger runs = new AtomicInteger();
        /** Thrown once by the next request, after its write. */
        final AtomicReference<RuntimeException> failNext = new AtomicReference<>();
        /** The next request writes its row twice: the deferred unique constraint fails only at commit. */
        final AtomicBoolean duplicateNext = new AtomicBoolean();
        /** Called by the handler after its write. */
        final AtomicReference<Runnable> whileRunning = new AtomicReference<>(() -> { });
    }

    @RestController
    static class ThingsController {
        private final JdbcTemplate jdbc;
        private final Probe probe;

        ThingsController(JdbcTemplate jdbc, Probe probe) {
            this.jdbc = jdbc;
            this.probe = probe;
        }

        @PostMapping("/things")
        ResponseEntity<Map<String, Object>> create(@RequestHeader("X-User") String user,
                @RequestBody Map<String, String> thing) {
            int run = probe.runs.incrementAndGet();
            String name = thing.get("name");
            jdbc.update("INSERT INTO " + THINGS + " (owner, name) VALUES (?, ?)", user, name);
            if (probe.duplicateNext.getAndSet(false)) {
                jdbc.update("INSERT INTO " + THINGS + " (owner, name) VALUES (?, ?)", user, name);
            }
            probe.whileRunning.get().run();
            RuntimeException failure = probe.failNext.getAndSet(null);
            if (failure != null) {
                throw failure;
            }
            return ResponseEntity.created(URI.create("/things/" + name)).body(Map.of("name", name, "run", run));
        }

        /** Asynchronous: its work would run outside a transaction, so its route runs in standalone mode. */
        @PostMapping("/things/later")
        CompletableFuture<ResponseEntity<String>> createLater(@RequestBody Map<String, String> thing) {
            probe.runs.incrementAndGet();
            return CompletableFuture.supplyAsync(() -> ResponseEntity.status(201).body(thing.get("name")));
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Probe probe;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    MeterRegistry meters;
    @Autowired
    RetrySafe engine;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private String key;
    private String name;
    private int runsBefore;

    @BeforeAll
    static void createThingsTable() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + THINGS + " (owner varchar(64) NOT NULL, name varchar(64) NOT NULL,"
                    + " CONSTRAINT " + THINGS + "_unique UNIQUE (owner, name) DEFERRABLE INITIALLY DEFERRED)");
        }
    }

    @AfterAll
    static void dropTables() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + THINGS);
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @BeforeEach
    void newIntent() {
        key = UUID.randomUUID().toString();
        name = "thing-" + UUID.randomUUID();
        runsBefore = probe.runs.get();
    }

    @AfterEach
    void reset() {
        probe.failNext.set(null);
        probe.duplicateNext.set(false);
        probe.whileRunning.set(() -> { });
    }

    @Test
    void firstRequestRunsAndCommitsTheRowWithTheKey() throws Exception {
        HttpResponse<String> created = post("alice", key, body(name));

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.headers().firstValue("Location")).hasValue("/things/" + name);
        assertThat(created.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(created.body()).contains("\"name\":\"" + name + "\"");
        assertThat(rows("alice")).isEqualTo(1);
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        assertThat(xmin("SELECT xmin::text FROM " + RECORDS + " WHERE idem_key = ?", key))
                .as("the key and the handler's row were committed by one transaction")
                .isEqualTo(xmin("SELECT xmin::text FROM " + THINGS + " WHERE name = ?", name));
    }

    @Test
    void anAsynchronousHandlersRouteRunsInStandaloneModeAndIsReplayed() throws Exception {
        HttpResponse<String> first = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            HttpResponse<String> response = send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                    + "/things/later")).timeout(Duration.ofSeconds(40)).header("Content-Type", "application/json")
                    .header(KEY, key).header("X-User", "alice").POST(BodyPublishers.ofString(body(name))).build());

            assertThat(response.statusCode()).as(response.body()).isEqualTo(201);
            assertThat(response.body()).isEqualTo(name);
            if (first == null) {
                first = response;
                assertThat(response.headers().firstValue(REPLAYED)).isEmpty();
            } else {
                assertThat(response.headers().firstValue(REPLAYED)).hasValue("true");
            }
        }
        assertThat(runs()).as("the handler ran once").isEqualTo(1);
        assertThat(keyStatus()).isEqualTo("COMPLETED");
    }

    @Test
    void retryIsReplayedWithoutRunningTheHandler() throws Exception {
        HttpResponse<String> first = post("alice", key, body(name));
        HttpResponse<String> retry = post("alice", key, body(name));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).hasValue("/things/" + name);
        assertThat(retry.headers().firstValue("Content-Type")).hasValueSatisfying(
                type -> assertThat(type).startsWith("application/json"));
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(runs()).isEqualTo(1);
        assertThat(rows("alice")).isEqualTo(1);
    }

    @Test
    void anotherCallersSameKeyIsAnotherIntent() throws Exception {
        post("alice", key, body(name));
        HttpResponse<String> bob = post("bob", key, body(name));

        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs()).isEqualTo(2);
        assertThat(rows("alice")).isEqualTo(1);
        assertThat(rows("bob")).isEqualTo(1);
    }

    @Test
    void sameKeyWithAnotherBodyIsRefused() throws Exception {
        post("alice", key, body(name));
        HttpResponse<String> other = post("alice", key, body(name + "-other"));

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void withoutTheScopeHeaderTheRequestIsRefused() throws Exception {
        HttpResponse<String> anonymous = send(request(key, body(name)).build());

        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(anonymous.body()).contains("\"type\":\"/problems/unauthenticated\"");
        assertThat(runs()).isZero();
    }

    @Test
    void withoutAKeyTheRouteRefusesTheRequest() throws Exception {
        HttpResponse<String> keyless = post("alice", null, body(name));

        assertThat(keyless.statusCode()).isEqualTo(400);
        assertThat(keyless.body()).contains("\"type\":\"/problems/missing-key\"");
        assertThat(runs()).isZero();
    }

    @Test
    void aHandlerThatThrowsLeavesNoRowAndNoKey() throws Exception {
        probe.failNext.set(new IllegalStateException("warehouse offline"));

        HttpResponse<String> failed = post("alice", key, body(name));

        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(failed.headers().firstValue("Location")).isEmpty();
        assertThat(rows("alice")).as("the handler's write was rolled back").isZero();
        assertThat(keyStatus()).as("no key was kept").isNull();

        HttpResponse<String> retry = post("alice", key, body(name));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs()).isEqualTo(2);
        assertThat(rows("alice")).isEqualTo(1);
    }

    @Test
    void aWriteThatFailsAtCommitIsAnsweredWith503NeverWithTheHandlersSuccess() throws Exception {
        probe.duplicateNext.set(true);
        double executedBefore = requests("executed");
        double storeErrorsBefore = requests("store_error");
        double commitErrorsBefore = storeErrors("commit");

        HttpResponse<String> failed = post("alice", key, body(name));

        assertThat(failed.statusCode()).as("the handler answered 201, but its transaction did not commit")
                .isEqualTo(503);
        assertThat(failed.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(failed.headers().firstValue("Retry-After")).isPresent();
        assertThat(failed.headers().firstValue("Location")).isEmpty();
        assertThat(failed.body()).contains("\"type\":\"/problems/store-unavailable\"").doesNotContain(name);
        assertThat(rows("alice")).isZero();
        assertThat(keyStatus()).isNull();
        // The metrics tell what the client saw: a store error, not a stored result.
        assertThat(requests("executed")).isEqualTo(executedBefore);
        assertThat(requests("store_error")).isEqualTo(storeErrorsBefore + 1);
        assertThat(storeErrors("commit")).isEqualTo(commitErrorsBefore + 1);

        HttpResponse<String> retry = post("alice", key, body(name));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(rows("alice")).isEqualTo(1);
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        assertThat(requests("executed")).isEqualTo(executedBefore + 1);
        assertThat(requests("store_error")).isEqualTo(storeErrorsBefore + 1);
    }

    private double requests(String outcome) {
        return meters.find(MicrometerRetrySafeListener.REQUESTS).tag("outcome", outcome).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    private double storeErrors(String operation) {
        return meters.find(MicrometerRetrySafeListener.STORE_ERRORS).tag("operation", operation).counters().stream()
                .mapToDouble(Counter::count).sum();
    }

    @Test
    void aDuplicateInFlightWaitsForTheFirstToCommitThenReplays() throws Exception {
        // The first request holds its transaction open until the duplicate is seen waiting for it, on
        // this instance and without a connection of its own.
        probe.whileRunning.set(() -> await().atMost(Duration.ofSeconds(20)).until(() -> Engines.inFlight(engine).waiting() == 1));
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(request(key, body(name))
                .header("X-User", "alice").build(), BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(20)).until(() -> probe.runs.get() == runsBefore + 1);

        HttpResponse<String> duplicate = post("alice", key, body(name));

        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        assertThat(duplicate.statusCode()).isEqualTo(201);
        assertThat(duplicate.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(duplicate.body()).isEqualTo(first.get().body());
        assertThat(runs()).isEqualTo(1);
        assertThat(rows("alice")).isEqualTo(1);
    }

    /**
     * Where RetrySafe's filter joins a transaction that ends only after it returns, the first request's answer is
     * not durable when it ends here: its duplicates are not given it, but ask the database, which makes them wait
     * for that transaction. Here it rolls back, so one of them runs the request again.
     */
    @Test
    void duplicatesOfARequestInAnOuterTransactionAreNotGivenItsUncommittedAnswer() throws Exception {
        int duplicates = 3;
        probe.whileRunning.set(() -> {
            probe.whileRunning.set(() -> { }); // the first request only
            await().atMost(Duration.ofSeconds(20)).until(() -> Engines.inFlight(engine).waiting() == duplicates);
        });
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(request(key, body(name))
                .header("X-User", "alice").header("X-Outer", "rollback").build(), BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(20)).until(() -> probe.runs.get() == runsBefore + 1);
        List<CompletableFuture<HttpResponse<String>>> waiting = new ArrayList<>();
        for (int i = 0; i < duplicates; i++) {
            waiting.add(http.sendAsync(request(key, body(name)).header("X-User", "alice").build(),
                    BodyHandlers.ofString()));
        }

        first.get(40, TimeUnit.SECONDS);
        for (CompletableFuture<HttpResponse<String>> duplicate : waiting) {
            assertThat(duplicate.get(40, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        }

        assertThat(rows("alice")).as("one committed effect").isEqualTo(1);
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        assertThat(runs()).as("the first run was rolled back, and a duplicate ran it again").isEqualTo(2);
    }

    private static String body(String name) {
        return "{\"name\":\"" + name + "\"}";
    }

    private HttpRequest.Builder request(String idempotencyKey, String json) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/things"))
                .timeout(Duration.ofSeconds(40)).header("Content-Type", "application/json")
                .POST(BodyPublishers.ofString(json));
        if (idempotencyKey != null) {
            b.header(KEY, idempotencyKey);
        }
        return b;
    }

    private HttpResponse<String> post(String user, String idempotencyKey, String json)
            throws IOException, InterruptedException {
        return send(request(idempotencyKey, json).header("X-User", user).build());
    }

    private HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
        return http.send(request, BodyHandlers.ofString());
    }

    private int runs() {
        return probe.runs.get() - runsBefore;
    }

    private int rows(String owner) {
        return jdbc.queryForObject("SELECT count(*) FROM " + THINGS + " WHERE owner = ? AND name = ?", Integer.class,
                owner, name);
    }

    /** The status of this test's key, or null when no record of it exists. */
    private String keyStatus() {
        List<String> statuses = jdbc.queryForList("SELECT status FROM " + RECORDS + " WHERE idem_key = ?",
                String.class, key);
        return statuses.isEmpty() ? null : statuses.get(0);
    }

    private String xmin(String sql, String arg) {
        return jdbc.queryForObject(sql, String.class, arg);
    }

}
