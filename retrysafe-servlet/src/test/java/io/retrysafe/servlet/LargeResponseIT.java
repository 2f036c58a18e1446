package io.retrysafe.servlet;


import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.LargeResponses;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A response far larger than the bound held for replay, served by a filter in a JVM whose heap is smaller than the
 * response ({@code -Xmx256m}, {@link ChildJvm}): the client gets every byte, the server survives, and a retry does
 * not run the handler again.
 */
class LargeResponseIT {
    private static final long BODY_BYTES = 200L * 1024 * 1024;
    private static final String RECORDS = "rs_large_records_"
            + UUID.randomUUID().toString().replace("-", "").substring(0, 12);

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    /** The server: the filter in standalone mode on PostgreSQL, in front of a handler that writes {@code args[1]} bytes. */
    public static final class App {
        public static void main(String[] args) throws Exception {
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(args[0]).build();
            store.createSchema();
            RetrySafe engine = RetrySafe.builder(store).name("large-response").build();
            HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/large").build())
                    .scope(ScopeResolver.header("X-User")).build();
            long bytes = Long.parseLong(args[1]);
            AtomicInteger runs = new AtomicInteger();
            EmbeddedTomcat tomcat = EmbeddedTomcat.start(Files.createTempDirectory("large-response"), context -> {
                EmbeddedTomcat.filter(context, "retrysafe",
                        new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
                EmbeddedTomcat.servlet(context, "large", new HttpServlet() {
                    @Override
                    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
                        runs.incrementAndGet();
                        resp.setContentType("application/octet-stream");
                        byte[] chunk = new byte[64 * 1024];
                        ServletOutputStream out = resp.getOutputStream();
                        for (long sent = 0; sent < bytes; sent += chunk.length) {
                            out.write(chunk, 0, (int) Math.min(chunk.length, bytes - sent));
                        }
                    }

                    @Override
                    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
                        resp.getWriter().print(runs.get());
                    }
                }, "/large");
            });
            System.out.println("READY " + tomcat.uri("/large"));
            Thread.currentThread().join();
        }
    }

    @AfterAll
    static void dropTable() throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @Test
    void aResponseLargerThanTheHeapIsServedWholeAndItsRetryDoesNotRunTheHandlerAgain() throws Exception {
        try (ChildJvm server = ChildJvm.start(App.class, "READY", RECORDS, Long.toString(BODY_BYTES))) {
            LargeResponses.assertServedWholeOnceThenReplayedWithoutBody(http,
                    URI.create(server.awaitLine(Duration.ofSeconds(60))), BODY_BYTES);
        }
    }
}
