package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.testservices.TestDatabases;
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
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
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
import org.springframework.http.ResponseEntity;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.context.request.async.WebAsyncTask;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;

/**
 * Asynchronous Spring MVC handlers behind the starter's filter in standalone mode, on a real Tomcat and the real
 * PostgreSQL: the answer is recorded when the asynchronous work finishes, and a retry replays it without running
 * the handler again; a handler that fails releases its key; one that times out may still be working, so its key
 * stays in progress and its answer is outcome-unknown; a streamed body is refused before the handler runs.
 */
@SpringBootTest(classes = SpringAsyncFilterIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.mode=standalone",
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/async/**",
                "retrysafe.store.initialize-schema=true",
                // The database server is shared: a few connections are plenty, and they go with the class.
                "spring.datasource.hikari.maximum-pool-size=4",
        })
@DirtiesContext
class SpringAsyncFilterIT {
    static final String RECORDS = "rs_async_records_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        TestPostgres.register(registry, RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(AsyncController.class)
    static class App {
        @Bean
        Runs runs() {
            return new Runs();
        }
    }

    /** How often each handler ran, by route. */
    static class Runs {
        final Map<String, AtomicInteger> byRoute = new ConcurrentHashMap<>();
        /** Completes the request held open on /async/held. */
        final AtomicReference<Runnable> held = new AtomicReference<>();

        int run(String route) {
            return byRoute.computeIfAbsent(route, r -> new AtomicInteger()).incrementAndGet();
        }

        int of(String route) {
            AtomicInteger n = byRoute.get(route);
            return n == null ? 0 : n.get();
        }
    }

    @RestController
    static class AsyncController {
        /** The asynchronous work runs here, never on the request thread. */
        private final ExecutorService work = Executors.newFixedThreadPool(2);
        private final Runs runs;

        AsyncController(Runs runs) {
            this.runs = runs;
        }

        private ResponseEntity<String> created(String route, String body) {
            return ResponseEntity.status(201).header("Location", "/async/" + route + "/" + runs.of(route))
                    .body(route + " run " + runs.run(route) + " of " + body);
        }

        @PostMapping("/async/future")
        CompletableFuture<ResponseEntity<String>> future(@RequestBody String body) {
            return CompletableFuture.supplyAsync(() -> created("future", body), work);
        }

        @PostMapping("/async/deferred")
        DeferredResult<ResponseEntity<String>> deferred(@RequestBody String body) {
            DeferredResult<ResponseEntity<String>> result = new DeferredResult<>();
            work.execute(() -> result.setResult(created("deferred", body)));
            return result;
        }

        @PostMapping("/async/callable")
        Callable<ResponseEntity<String>> callable(@RequestBody String body) {
            return () -> created("callable", body);
        }

        @PostMapping("/async/task")
        WebAsyncTask<ResponseEntity<String>> task(@RequestBody String body) {
            return new WebAsyncTask<>(10_000L, () -> created("task", body));
        }

        @PostMapping("/async/failing")
        CompletableFuture<String> failing(@RequestBody String body) {
            return CompletableFuture.supplyAsync(() -> {
                runs.run("failing");
                throw new IllegalStateException("the asynchronous work failed");
            }, work);
        }

        @PostMapping("/async/unavailable")
        CompletableFuture<ResponseEntity<String>> unavailable(@RequestBody String body) {
            return CompletableFuture.supplyAsync(() -> ResponseEntity.status(503).body("run " + runs.run("unavailable")),
                    work);
        }

        /** Completed by the test, through {@link Runs#held}. */
        @PostMapping("/async/held")
        DeferredResult<ResponseEntity<String>> held(@RequestBody String body) {
            DeferredResult<ResponseEntity<String>> result = new DeferredResult<>(30_000L);
            runs.held.set(() -> result.setResult(created("held", body)));
            return result;
        }

        /** Never completed: the container's async time-out ends it. */
        @PostMapping("/async/timeout")
        DeferredResult<String> timeout(@RequestBody String body) {
            runs.run("timeout");
            return new DeferredResult<>(300L);
        }

        @PostMapping("/async/streaming")
        StreamingResponseBody streaming(@RequestBody String body) {
            runs.run("streaming");
            return out -> out.write("streamed".getBytes());
        }

        @PostMapping("/async/sse")
        SseEmitter sse(@RequestBody String body) throws IOException {
            runs.run("sse");
            SseEmitter emitter = new SseEmitter();
            emitter.send("event");
            emitter.complete();
            return emitter;
        }

        @PostMapping("/async/emitter")
        ResponseEntity<ResponseBodyEmitter> emitter(@RequestBody String body) throws IOException {
            runs.run("emitter");
            ResponseBodyEmitter emitter = new ResponseBodyEmitter();
            emitter.complete();
            return ResponseEntity.ok(emitter);
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Runs runs;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private String key;

    @BeforeEach
    void newIntent() {
        key = UUID.randomUUID().toString();
    }

    @AfterAll
    static void dropTable() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"future", "deferred", "callable", "task"})
    void asynchronousAnswerIsStoredAndReplayedWithoutRunningTheHandlerAgain(String route) throws Exception {
        int before = runs.of(route);

        HttpResponse<String> first = post(route, "{\"amount\":1}");
        HttpResponse<String> retry = post(route, "{\"amount\":1}");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo(route + " run " + (before + 1) + " of {\"amount\":1}");
        assertThat(first.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(keyStatus()).isEqualTo("COMPLETED");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(runs.of(route) - before).as("the handler ran once").isEqualTo(1);
    }

    @Test
    void theKeyIsHeldWhileTheAsynchronousWorkRunsAndItsAnswerIsReplayedAfter() throws Exception {
        runs.held.set(null);
        CompletableFuture<HttpResponse<String>> first = http.sendAsync(request("held", "{}"), BodyHandlers.ofString());
        await().atMost(Duration.ofSeconds(20)).until(() -> runs.held.get() != null);

        HttpResponse<String> duplicate = post("held", "{}");
        runs.held.get().run();
        HttpResponse<String> answered = first.get(30, TimeUnit.SECONDS);
        HttpResponse<String> retry = post("held", "{}");

        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(duplicate.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(duplicate.headers().firstValue("Retry-After")).isPresent();
        assertThat(answered.statusCode()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(answered.body());
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
    }

    @ParameterizedTest
    @ValueSource(strings = {"failing", "unavailable"})
    void asynchronousFailureReleasesTheKeyAndTheRetryRunsAgain(String route) throws Exception {
        int before = runs.of(route);

        HttpResponse<String> first = post(route, "{}");
        assertThat(keyStatus()).as("nothing is stored for a failed attempt").isNotEqualTo("COMPLETED");
        HttpResponse<String> retry = post(route, "{}");

        assertThat(first.statusCode()).isBetween(500, 599);
        assertThat(retry.statusCode()).isBetween(500, 599);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs.of(route) - before).as("the retry ran the handler again").isEqualTo(2);
    }

    @Test
    void aTimedOutHandlerIsOutcomeUnknownAndItsKeyStaysInProgress() throws Exception {
        int before = runs.of("timeout");

        HttpResponse<String> first = post("timeout", "{}");
        HttpResponse<String> retry = post("timeout", "{}");

        // Spring answers its own 503 to the time-out; the filter's problem replaces it, and the key is kept.
        assertThat(first.statusCode()).isEqualTo(503);
        assertThat(first.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(first.body()).contains("\"type\":\"/problems/outcome-unknown\"");
        assertThat(keyStatus()).isEqualTo("IN_PROGRESS");
        assertThat(retry.statusCode()).isEqualTo(409);
        assertThat(retry.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(runs.of("timeout") - before).as("the work that may still commit is not run again").isEqualTo(1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"streaming", "sse", "emitter"})
    void streamedBodyIsRefusedBeforeTheHandlerRunsAndNothingIsStored(String route) throws Exception {
        int before = runs.of(route);

        HttpResponse<String> first = post(route, "{}");
        HttpResponse<String> retry = post(route, "{}");

        for (HttpResponse<String> response : java.util.List.of(first, retry)) {
            assertThat(response.statusCode()).isEqualTo(500);
            assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(response.body()).contains("\"type\":\"/problems/streaming-refused\"");
            assertThat(response.headers().firstValue(REPLAYED)).isEmpty();
        }
        assertThat(runs.of(route) - before).as("the handler never ran").isZero();
        assertThat(keyStatus()).isNotEqualTo("COMPLETED");
    }

    private HttpResponse<String> post(String route, String json) throws IOException, InterruptedException {
        return http.send(request(route, json), BodyHandlers.ofString());
    }

    private HttpRequest request(String route, String json) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/async/" + route))
                .header(HttpIdempotency.HEADER, key).header("X-User", "alice").header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30)).POST(BodyPublishers.ofString(json)).build();
    }

    /** The key's record status, or "ABSENT". */
    private String keyStatus() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection();
                var s = c.prepareStatement("SELECT status FROM " + RECORDS + " WHERE idem_key = ?")) {
            s.setString(1, key);
            try (var rs = s.executeQuery()) {
                return rs.next() ? rs.getString(1) : "ABSENT";
            }
        }
    }
}
