package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Engines;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.testservices.TestDatabases;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Thirty copies of one slow request in flight must not starve the service: on a real Tomcat, in
 * transactional mode on the real PostgreSQL, with a pool of ten connections that gives up on a
 * borrower after 250 ms. The duplicates are answered on this instance without a connection, so an
 * unrelated endpoint on the same pool keeps answering, the pool never fills, and the slow request
 * then completes and its retry replays.
 */
// The pool is closed with the context after the class: the database server is shared.
@DirtiesContext
@SpringBootTest(classes = DuplicateStormIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/transfers",
                "retrysafe.http.scope=global",
                "retrysafe.store.initialize-schema=true",
                // A duplicate waits this long in memory for the slow request, then gets 409.
                "retrysafe.store.lock-timeout=1s",
                "spring.datasource.hikari.maximum-pool-size=" + DuplicateStormIT.POOL,
                "spring.datasource.hikari.connection-timeout=250",
        })
class DuplicateStormIT {
    static final int POOL = 10;
    private static final int DUPLICATES = 30;
    private static final int UNRELATED = 40;
    private static final int READERS = 4;
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String TRANSFERS = "rs_storm_transfers_" + SUFFIX;
    static final String RECORDS = "rs_storm_records_" + SUFFIX;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        TestApps.postgres(registry, RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(TransfersController.class)
    static class App {
        @Bean
        Probe probe() {
            return new Probe();
        }
    }

    static class Probe {
        final AtomicInteger runs = new AtomicInteger();
        final AtomicReference<Runnable> whileRunning = new AtomicReference<>(() -> { });
    }

    @RestController
    static class TransfersController {
        private final JdbcTemplate jdbc;
        private final Probe probe;

        TransfersController(JdbcTemplate jdbc, Probe probe) {
            this.jdbc = jdbc;
            this.probe = probe;
        }

        @PostMapping("/transfers")
        ResponseEntity<Map<String, Object>> transfer(@RequestBody Map<String, String> transfer) {
            int run = probe.runs.incrementAndGet();
            jdbc.update("INSERT INTO " + TRANSFERS + " (name) VALUES (?)", transfer.get("name"));
            probe.whileRunning.get().run();
            return ResponseEntity.status(201).body(Map.of("name", transfer.get("name"), "run", run));
        }

        /** Unrelated to the key: reads on the same pool. */
        @GetMapping("/transfers/count")
        Map<String, Object> count() {
            return Map.of("count", jdbc.queryForObject("SELECT count(*) FROM " + TRANSFERS, Long.class));
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Probe probe;
    @Autowired
    HikariDataSource dataSource;
    @Autowired
    RetrySafe engine;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeAll
    static void createTable() throws Exception {
        TestApps.sql(TestDatabases.postgres(), "CREATE TABLE " + TRANSFERS + " (name varchar(64) NOT NULL)");
    }

    @AfterAll
    static void dropTables() throws Exception {
        TestApps.sql(TestDatabases.postgres(), "DROP TABLE IF EXISTS " + TRANSFERS, "DROP TABLE IF EXISTS " + RECORDS);
    }

    @Test
    void duplicatesOfASlowRequestDoNotStarveAnUnrelatedEndpointOnTheSamePool() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"name\":\"" + key + "\"}";
        CountDownLatch finish = new CountDownLatch(1);
        probe.whileRunning.set(() -> TestApps.holdUntil(finish));
        CompletableFuture<HttpResponse<String>> slow = sendAsync(post(key, body));
        await().atMost(Duration.ofSeconds(20)).until(() -> probe.runs.get() == 1);
        probe.whileRunning.set(() -> { });

        AtomicInteger maxActive = new AtomicInteger();
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                maxActive.accumulateAndGet(dataSource.getHikariPoolMXBean().getActiveConnections(), Math::max);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // a sampling period, not a wait for anything
            }
        });
        sampler.start();
        List<CompletableFuture<HttpResponse<String>>> duplicates = new ArrayList<>();
        List<HttpResponse<String>> unrelated;
        try {
            for (int i = 0; i < DUPLICATES; i++) {
                duplicates.add(sendAsync(post(key, body)));
            }
            // Every duplicate is in the service (waiting on the key, or, without the registry, on the pool).
            await().atMost(Duration.ofSeconds(20)).until(() -> Engines.inFlight(engine).waiting() == DUPLICATES
                    || dataSource.getHikariPoolMXBean().getThreadsAwaitingConnection() > 0
                    || duplicates.stream().anyMatch(CompletableFuture::isDone));
            // A few at a time: together with the slow request they need well under the pool's ten connections.
            unrelated = new ArrayList<>();
            for (int batch = 0; batch < UNRELATED / READERS; batch++) {
                List<CompletableFuture<HttpResponse<String>>> reads = new ArrayList<>();
                for (int i = 0; i < READERS; i++) {
                    reads.add(sendAsync(HttpRequest.newBuilder(uri("/transfers/count"))
                            .timeout(Duration.ofSeconds(30)).GET().build()));
                }
                reads.forEach(r -> unrelated.add(r.join()));
            }
            for (CompletableFuture<HttpResponse<String>> d : duplicates) {
                d.get(30, TimeUnit.SECONDS);
            }
        } finally {
            sampler.interrupt();
            sampler.join();
            finish.countDown();
        }

        assertThat(unrelated).as("every unrelated request got a connection and answered")
                .allSatisfy(r -> assertThat(r.statusCode()).isEqualTo(200));
        assertThat(duplicates).allSatisfy(d -> {
            HttpResponse<String> r = d.join();
            assertThat(r.statusCode()).isEqualTo(409);
            assertThat(r.headers().firstValue("Retry-After")).isPresent();
        });
        assertThat(maxActive.get()).as("the duplicates held no connection: the pool never filled").isLessThan(POOL);

        HttpResponse<String> first = slow.get(30, TimeUnit.SECONDS);
        assertThat(first.statusCode()).isEqualTo(201);
        HttpResponse<String> retry = http.send(post(key, body), BodyHandlers.ofString());
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(probe.runs.get()).as("the transfer ran once").isEqualTo(1);
        assertThat(Engines.inFlight(engine).size()).as("every way out freed the key").isZero();
    }

    private HttpRequest post(String key, String body) {
        return HttpRequest.newBuilder(uri("/transfers")).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").header(HttpIdempotency.HEADER, key)
                .POST(BodyPublishers.ofString(body)).build();
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    private CompletableFuture<HttpResponse<String>> sendAsync(HttpRequest request) {
        return http.sendAsync(request, BodyHandlers.ofString());
    }
}
