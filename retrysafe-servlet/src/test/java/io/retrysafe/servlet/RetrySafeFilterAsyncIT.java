package io.retrysafe.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
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
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A plain servlet that answers asynchronously ({@code startAsync()}), behind the filter on a real Tomcat and the
 * real PostgreSQL: in standalone mode its answer is stored when the cycle ends, whether it ends by a dispatch or by
 * {@code complete()}, and replayed; in transactional mode it is refused and its key released.
 */
class RetrySafeFilterAsyncIT {
    private static final String RECORDS = "rs_async_servlet_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    private static final AtomicInteger RUNS = new AtomicInteger();
    /** The container's time-out of the /timeout handlers' cycles; the key's lease is far longer. */
    private static final Duration ASYNC_TIMEOUT = Duration.ofMillis(300);

    @TempDir
    static Path baseDir;

    private static EmbeddedTomcat standalone;
    private static EmbeddedTomcat transactional;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    /**
     * Answers on another thread: by writing and calling complete(), or by a dispatch to /render. On /timeout it
     * never answers within the cycle's time-out, as work that is still running (and may yet commit) does not;
     * on /timeout-dispatch a listener registered before the filter's dispatches the time-out to /render, as
     * Spring MVC does for a {@code DeferredResult} or {@code Callable}.
     */
    static final class LaterServlet extends HttpServlet {
        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            int run = RUNS.incrementAndGet();
            if (req.getRequestURI().contains("/timeout")) {
                AsyncContext async = req.startAsync(req, resp);
                async.setTimeout(ASYNC_TIMEOUT.toMillis());
                if (req.getRequestURI().endsWith("/timeout-dispatch")) {
                    async.addListener(new AsyncListener() {
                        @Override
                        public void onTimeout(AsyncEvent event) {
                            event.getAsyncContext().dispatch("/render");
                        }

                        @Override
                        public void onComplete(AsyncEvent event) {
                        }

                        @Override
                        public void onError(AsyncEvent event) {
                        }

                        @Override
                        public void onStartAsync(AsyncEvent event) {
                        }
                    });
                }
                return;
            }
            if (req.getRequestURI().endsWith("/complete-inline")) {
                // Ends its cycle before returning: the container finishes it once the filter has returned.
                AsyncContext async = req.startAsync(req, resp);
                HttpServletResponse response = (HttpServletResponse) async.getResponse();
                response.setStatus(201);
                response.setContentType("text/plain");
                response.getWriter().print("completed run " + run);
                async.complete();
                return;
            }
            boolean dispatch = req.getRequestURI().endsWith("/dispatch");
            // A dispatch goes through the filter whichever response the cycle holds; complete() does not.
            AsyncContext async = dispatch || req.getRequestURI().endsWith("/unwrapped") ? req.startAsync()
                    : req.startAsync(req, resp);
            async.start(() -> {
                try {
                    if (dispatch) {
                        async.getRequest().setAttribute("run", run);
                        async.dispatch("/render");
                        return;
                    }
                    HttpServletResponse response = (HttpServletResponse) async.getResponse();
                    response.setStatus(201);
                    response.setContentType("text/plain");
                    response.getWriter().print("completed run " + run);
                    async.complete();
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                } catch (IllegalStateException ended) {
                    // The filter refused this handler and ended its cycle first. Tomcat marks the request that
                    // now holds the recycled connection as failed when this Runnable throws: a handler on its
                    // own thread must expect its cycle to be ended by others, as after a time-out.
                }
            });
        }
    }

    static final class RenderServlet extends HttpServlet {
        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setStatus(201);
            resp.setContentType("text/plain");
            resp.getWriter().print("dispatched run " + req.getAttribute("run"));
        }
    }

    @BeforeAll
    static void start() throws Exception {
        DataSource ds = TestDatabases.postgres();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(RECORDS).build();
        store.createSchema();
        RetrySafe engine = RetrySafe.builder(store).name("async-servlet-it").build();
        HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/later/**").build())
                .scope(ScopeResolver.header("X-User")).build();
        standalone = EmbeddedTomcat.start(baseDir.resolve("standalone"), context -> {
            EmbeddedTomcat.asyncFilter(context, "retrysafe",
                    new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.asyncServlet(context, "later", new LaterServlet(), "/later/*");
            EmbeddedTomcat.asyncServlet(context, "render", new RenderServlet(), "/render");
        });
        TransactionalRetrySafe tx = TransactionalRetrySafe.of(engine);
        transactional = EmbeddedTomcat.start(baseDir.resolve("transactional"), context -> {
            EmbeddedTomcat.asyncFilter(context, "retrysafe",
                    new RetrySafeFilter(config, new JdbcTransactionalExecutor(tx, ds), engine.listener()), "/*");
            EmbeddedTomcat.asyncServlet(context, "later", new LaterServlet(), "/later/*");
        });
    }

    @AfterAll
    static void stop() throws Exception {
        standalone.close();
        transactional.close();
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + RECORDS);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"complete", "dispatch"})
    void asynchronousAnswerIsStoredWhenTheCycleEndsAndReplayed(String ending) throws Exception {
        String key = UUID.randomUUID().toString();
        int before = RUNS.get();

        HttpResponse<String> first = post(standalone, "/later/" + ending, key);
        HttpResponse<String> retry = post(standalone, "/later/" + ending, key);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo((ending.equals("complete") ? "completed" : "dispatched") + " run "
                + (before + 1));
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(RUNS.get() - before).as("the handler ran once").isEqualTo(1);
    }

    @Test
    void anAnswerWrittenPastTheFilterIsNotStoredAndItsKeyIsReleased() throws Exception {
        String key = UUID.randomUUID().toString();
        int before = RUNS.get();

        HttpResponse<String> first = post(standalone, "/later/unwrapped", key);
        HttpResponse<String> retry = post(standalone, "/later/unwrapped", key);

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).isEqualTo("completed run " + (before + 1));
        assertThat(retry.body()).isEqualTo("completed run " + (before + 2));
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"timeout", "timeout-dispatch"})
    void aTimedOutCycleIsOutcomeUnknownAndItsKeyStaysInProgress(String path) throws Exception {
        String key = UUID.randomUUID().toString();
        int before = RUNS.get();

        HttpResponse<String> first = post(standalone, "/later/" + path, key);
        HttpResponse<String> retry = post(standalone, "/later/" + path, key);

        // The handler may still be working, and its work may still commit: no retry may run it a second time.
        assertThat(first.statusCode()).as(first.body()).isEqualTo(503);
        assertThat(first.headers().firstValue("Content-Type")).hasValue(Problem.CONTENT_TYPE);
        assertThat(first.headers().firstValue("Retry-After")).isPresent();
        assertThat(first.body()).contains("\"type\":\"/problems/outcome-unknown\"");
        assertThat(retry.statusCode()).as("the key is still in progress: " + retry.body()).isEqualTo(409);
        assertThat(retry.body()).contains("\"type\":\"/problems/request-in-progress\"");
        assertThat(RUNS.get() - before).as("the handler ran once").isEqualTo(1);
    }

    /**
     * On "complete-inline" the handler calls complete() before it returns, as one on another thread may do while
     * the filter is still answering: the refusal must go out all the same, not the container's error page.
     */
    @ParameterizedTest
    @ValueSource(strings = {"complete", "complete-inline"})
    void transactionalModeRefusesAnAsynchronousHandlerAndReleasesItsKey(String ending) throws Exception {
        String key = UUID.randomUUID().toString();

        HttpResponse<String> first = post(transactional, "/later/" + ending, key);
        HttpResponse<String> retry = post(transactional, "/later/" + ending, key);

        for (HttpResponse<String> refused : java.util.List.of(first, retry)) {
            assertThat(refused.statusCode()).isEqualTo(500);
            assertThat(refused.headers().firstValue("Content-Type")).hasValue(Problem.CONTENT_TYPE);
            assertThat(refused.body()).contains("\"type\":\"/problems/async-handler-refused\"");
            assertThat(refused.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
        }
    }

    private HttpResponse<String> post(EmbeddedTomcat tomcat, String path, String key)
            throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(tomcat.uri(path)).timeout(Duration.ofSeconds(30))
                .header(HttpIdempotency.HEADER, key).header("X-User", "alice").POST(BodyPublishers.ofString("{}"))
                .header("Content-Type", "application/json").build(), BodyHandlers.ofString());
    }
}
