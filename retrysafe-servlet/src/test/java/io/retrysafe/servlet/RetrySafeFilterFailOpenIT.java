package io.retrysafe.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.catalina.Context;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * Fail-open, as a client of a real Tomcat sees it: a request runs unprotected only when the store
 * cannot be reached. A store that answers and refuses (the in-memory store full, a table that does
 * not exist) is {@code 503} and the handler does not run, fail-open or not.
 */
class RetrySafeFilterFailOpenIT {
    @TempDir
    static Path baseDir;
    private static EmbeddedTomcat tomcat;
    private static HttpClient http;
    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

    @BeforeAll
    static void startTomcat() throws Exception {
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();
        PGSimpleDataSource closedPort = new PGSimpleDataSource();
        closedPort.setServerNames(new String[] {"127.0.0.1"});
        closedPort.setPortNumbers(new int[] {1}); // nothing listens there: the store cannot be reached
        tomcat = EmbeddedTomcat.start(baseDir, context -> {
            protect(context, "full", new InMemoryIdempotencyStore(Clock.systemUTC(), 1));
            protect(context, "unreachable", JdbcIdempotencyStore.builder(closedPort).dialect(JdbcDialect.POSTGRESQL)
                    .build());
            protect(context, "misconfigured", JdbcIdempotencyStore.builder(TestDatabases.postgres())
                    .dialect(JdbcDialect.POSTGRESQL).table("rs_never_created_" + UUID.randomUUID().toString()
                            .replace("-", "").substring(0, 12)).build());
            EmbeddedTomcat.servlet(context, "transfers", new HttpServlet() {
                @Override
                protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
                    RUNS.computeIfAbsent(req.getRequestURI(), p -> new AtomicInteger()).incrementAndGet();
                    resp.setStatus(201);
                    resp.getWriter().write("done");
                }
            }, "/*");
        });
    }

    /** A filter failing open on {@code store} for {@code POST /<name>/transfers}. */
    private static void protect(Context context, String name, IdempotencyStore store) {
        RetrySafe engine = RetrySafe.builder(store).name(name).failOpen(true).build();
        HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/" + name + "/transfers")
                .build()).scope(ScopeResolver.global(name)).build();
        EmbeddedTomcat.filter(context, name, new RetrySafeFilter(config, IdempotentExecutor.standalone(engine),
                engine.listener()), "/" + name + "/*");
    }

    @AfterAll
    static void stopTomcat() throws Exception {
        tomcat.close();
    }

    @Test
    void aFullStoreIsRefusedNotRunUnprotected() throws Exception {
        assertThat(post("/full/transfers").statusCode()).isEqualTo(201);

        HttpResponse<String> refused = post("/full/transfers");

        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(refused.headers().firstValue("Retry-After")).isPresent();
        assertThat(runs("/full/transfers")).as("only the first, which the store recorded, ran").isEqualTo(1);
    }

    @Test
    void aStoreThatAnswersWithAnErrorIsRefusedNotRunUnprotected() throws Exception {
        HttpResponse<String> refused = post("/misconfigured/transfers");

        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(runs("/misconfigured/transfers")).isZero();
    }

    @Test
    void anUnreachableStoreFailsOpen() throws Exception {
        HttpResponse<String> unprotected = post("/unreachable/transfers");

        assertThat(unprotected.statusCode()).isEqualTo(201);
        assertThat(runs("/unreachable/transfers")).isEqualTo(1);
    }

    private static HttpResponse<String> post(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(tomcat.uri(path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json").header(HttpIdempotency.HEADER, UUID.randomUUID().toString())
                .POST(BodyPublishers.ofString("{\"amount\":10}")).build(), BodyHandlers.ofString());
    }

    private static int runs(String path) {
        return RUNS.getOrDefault(path, new AtomicInteger()).get();
    }
}
