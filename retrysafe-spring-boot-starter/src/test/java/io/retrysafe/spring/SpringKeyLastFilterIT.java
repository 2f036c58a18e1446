package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.internal.Engines;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.testservices.TestDatabases;
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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * The starter's filter with {@code retrysafe.store.key-order=last}, as a client sees it: a Spring Boot
 * application on a real Tomcat and the real PostgreSQL. The record is inserted with the commit; a
 * duplicate in flight on this instance waits for the first in memory and answers with its response.
 */
@SpringBootTest(classes = SpringKeyLastFilterIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/things",
                "retrysafe.store.initialize-schema=true",
                "retrysafe.store.key-order=last",
                "retrysafe.store.lock-timeout=30s",
                "spring.datasource.hikari.maximum-pool-size=24",
        })
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class SpringKeyLastFilterIT {
    // Subclassed for the key written last without a look-up, with every test of this class.
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String THINGS = "rs_key_last_things_" + SUFFIX;
    static final String RECORDS = "rs_key_last_records_" + SUFFIX;
    private static final int THREADS = 16;

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
    }

    static class Probe {
        final AtomicInteger runs = new AtomicInteger();
        /** Called by the handler after its write, with the run's number. */
        final AtomicReference<IntConsumer> whileRunning = new AtomicReference<>(run -> { });
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
            probe.whileRunning.get().accept(run);
            return ResponseEntity.created(URI.create("/things/" + name)).body(Map.of("name", name, "run", run));
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Probe probe;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    TransactionalRetrySafe transactional;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    String key;
    String name;
    int runsBefore;

    @BeforeAll
    static void createThingsTable() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            // No unique constraint: a second committed run would show as a second row.
            s.execute("CREATE TABLE " + THINGS + " (owner varchar(64) NOT NULL, name varchar(64) NOT NULL)");
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
        probe.whileRunning.set(run -> { });
    }

    @Test
    void theStarterWritesTheKeyLast() {
        assertThat(transactional.keyOrder()).isEqualTo(order());
    }

    KeyOrder order() {
        return KeyOrder.LAST;
    }

    /** How often a retry after the first's commit runs the handler (rolled back when it does). */
    int handlerRunsOfARetry() {
        return 0;
    }

    @Test
    void theRecordCommitsWithTheHandlersRowAndARetryReplays() throws Exception {
        HttpResponse<String> created = post(key);
        HttpResponse<String> retry = post(key);

        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(retry.body()).isEqualTo(created.body());
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        assertThat(rows()).isEqualTo(1);
        assertThat(probe.runs.get() - runsBefore).isEqualTo(1 + handlerRunsOfARetry());
    }

    /** How often the handler runs for a key whose record expired (a run rolled back is counted). */
    int handlerRunsOverAnExpiredRecord() {
        return 1;
    }

    @Test
    void aKeyWhoseRecordExpiredRunsAsANewRequestAndAnswersWithTheRunItKeeps() throws Exception {
        HttpResponse<String> first = post(key);
        jdbc.update("UPDATE " + RECORDS + " SET expires_at = statement_timestamp() - interval '1 minute'"
                + " WHERE idem_key = ?", key);
        int runsAfterFirst = probe.runs.get();

        HttpResponse<String> again = post(key);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(again.statusCode()).as(again.body()).isEqualTo(201);
        assertThat(again.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
        assertThat(probe.runs.get() - runsAfterFirst).isEqualTo(handlerRunsOverAnExpiredRecord());
        assertThat(Pattern.compile("\"run\":(\\d+)").matcher(again.body()).results().map(m -> m.group(1)))
                .as("the run kept, alone: %s", again.body()).containsExactly(String.valueOf(probe.runs.get()));
        assertThat(rows()).as("the first request's row and the kept run's").isEqualTo(2);
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        HttpResponse<String> retry = post(key);
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(retry.body()).isEqualTo(again.body());
        assertThat(rows()).isEqualTo(2);
    }

    @Test
    void aDuplicateInFlightOnThisInstanceWaitsForTheFirstAndReplaysWithoutRunning() throws Exception {
        // Key last lets a duplicate from another instance run and be rolled back (PostgresKeyLastIT);
        // on the same instance it waits for the first in memory, and never runs the handler.
        int firstRun = runsBefore + 1;
        probe.whileRunning.set(run -> await().atMost(Duration.ofSeconds(20))
                .until(() -> Engines.inFlight(transactional.engine()).waiting() == 1));
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(request(key), BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(20)).until(() -> probe.runs.get() == firstRun);

        HttpResponse<String> duplicate = post(key);

        assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        assertThat(first.get().headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
        assertThat(duplicate.statusCode()).isEqualTo(201);
        assertThat(duplicate.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(duplicate.body()).isEqualTo(first.get().body());
        assertThat(probe.runs.get() - runsBefore).as("only the first ran").isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void sixteenDuplicatesAtOnceMakeOneRowAndGetOneAnswer() throws Exception {
        List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            sent.add(http.sendAsync(request(key), BodyHandlers.ofString()));
        }
        List<HttpResponse<String>> answers = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> f : sent) {
            answers.add(f.get(60, TimeUnit.SECONDS));
        }

        assertThat(answers).allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(201));
        assertThat(answers).extracting(HttpResponse::body).containsOnly(answers.get(0).body());
        assertThat(answers).filteredOn(r -> r.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER).isEmpty())
                .as("one answer came from its own run, the others were replayed").hasSize(1);
        assertThat(rows()).isEqualTo(1);
    }

    private HttpRequest request(String idempotencyKey) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/things"))
                .timeout(Duration.ofSeconds(40)).header("Content-Type", "application/json").header("X-User", "alice")
                .header(HttpIdempotency.HEADER, idempotencyKey)
                .POST(BodyPublishers.ofString("{\"name\":\"" + name + "\"}")).build();
    }

    HttpResponse<String> post(String idempotencyKey) throws Exception {
        return http.send(request(idempotencyKey), BodyHandlers.ofString());
    }

    int rows() {
        return jdbc.queryForObject("SELECT count(*) FROM " + THINGS + " WHERE name = ?", Integer.class, name);
    }

    /** The status of this test's key, or null when no record of it is committed. */
    private String keyStatus() {
        List<String> statuses = jdbc.queryForList("SELECT status FROM " + RECORDS + " WHERE idem_key = ?",
                String.class, key);
        return statuses.isEmpty() ? null : statuses.get(0);
    }
}
