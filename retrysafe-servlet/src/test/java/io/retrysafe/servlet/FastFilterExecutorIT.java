package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static io.retrysafe.servlet.HttpAnswers.assertProblem;
import static io.retrysafe.servlet.HttpAnswers.assertReplayOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisFastFilter.BreakerState;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import jakarta.servlet.ServletException;
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
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis as the fast filter in front of the transactional PostgreSQL store, as a client sees it: a
 * real Tomcat, the real {@link JdbcTransactionalExecutor} on PostgreSQL, and a private
 * {@code redis-server} per test (so it can be killed). The application's DataSource is wrapped in a
 * {@link CountingDataSource} (a decorator over the real pool): an answer that took no connection did
 * not touch PostgreSQL.
 */
class FastFilterExecutorIT {
    private static final String RECORDS = "rs_fast_filter_it";
    private static final String PAYMENTS = "rs_fast_filter_it_payment";
    private static final String KEY = HttpIdempotency.HEADER;
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;
    private static final String JSON = "application/json";
    private static final String ALICE = "alice";
    /** What {@code ScopeResolver.header("X-User")} and the route make of Alice's requests. */
    private static final String SCOPE = "header:X-User:" + ALICE + "|POST /payments";
    private static final String BODY = "{\"amount\":100}";
    /** Not part of the fingerprint: the handler waits in flight until the test releases it. */
    private static final String HOLD = "X-Hold";
    /** Generous for a loaded build machine: a timeout would send a request to PostgreSQL and fail an assertion. */
    private static final Duration REDIS_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration BOUND = Duration.ofSeconds(60);

    private static CountingDataSource dataSource;
    private static JdbcIdempotencyStore jdbc;
    private static TransactionalRetrySafe transactional;
    private static HttpClient http;

    @TempDir
    Path dir;

    private TestRedis.Server redis;
    private RedisClient client;
    private StatefulRedisConnection<String, String> admin;
    private final AtomicLong ticker = new AtomicLong();
    private final Recorder recorder = new Recorder();
    private RedisFastFilter fastFilter;
    private EmbeddedTomcat tomcat;
    private String key;

    /** What the fast filter reported. */
    static final class Recorder implements RedisFastFilter.Listener {
        final List<String> changes = new CopyOnWriteArrayList<>();
        final List<String> failures = new CopyOnWriteArrayList<>();

        @Override
        public void onStateChange(BreakerState from, BreakerState to) {
            changes.add(from + "->" + to);
        }

        @Override
        public void onFailure(String operation, RuntimeException error) {
            failures.add(operation);
        }
    }

    @BeforeAll
    static void database() throws SQLException {
        dataSource = new CountingDataSource(TestDatabases.postgres());
        jdbc = JdbcIdempotencyStore.builder(dataSource).table(RECORDS).build();
        jdbc.createSchema();
        try (Connection c = TestDatabases.postgres().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + PAYMENTS + " (id bigserial PRIMARY KEY, ref text NOT NULL, "
                    + "slot integer, CONSTRAINT " + PAYMENTS + "_slot UNIQUE (slot) DEFERRABLE INITIALLY DEFERRED)");
        }
        transactional = TransactionalRetrySafe.of(RetrySafe.builder(jdbc).name("fast-filter-it").build());
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    @BeforeEach
    void start() throws Exception {
        key = UUID.randomUUID().toString();
        redis = TestRedis.startServer(dir);
        client = RedisClient.create(redis.uri());
        admin = client.connect();
        fastFilter = RedisFastFilter.builder(client).timeout(REDIS_TIMEOUT).listener(recorder).ticker(ticker::get)
                .build();
        tomcat = serve(dir.resolve("tomcat"), FastFilterExecutor.builder(
                new JdbcTransactionalExecutor(transactional, dataSource), fastFilter, transactional.engine()).build());
    }

    /** The ledger behind the filter on {@code executor}, on a Tomcat of its own. */
    private static EmbeddedTomcat serve(Path dir, IdempotentExecutor executor) throws Exception {
        HttpIdempotency config = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/payments").build())
                .scope(ScopeResolver.header("X-User"))
                .build();
        return EmbeddedTomcat.start(dir, context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, executor, transactional.engine().listener()), "/*");
            EmbeddedTomcat.servlet(context, "ledger", new LedgerServlet(), "/*");
        });
    }

    @AfterEach
    void stop() throws Exception {
        LedgerServlet.RELEASE.values().forEach(CountDownLatch::countDown);
        try {
            if (tomcat != null) {
                tomcat.close();
            }
        } finally {
            fastFilter.close();
            admin.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            redis.close();
        }
    }

    // ------------------------------------------------------------------ answered from Redis

    @Test
    void aReplayIsServedFromRedisWithoutAConnectionAndIsWhatPostgresStored() throws Exception {
        HttpResponse<byte[]> first = send(pay(key, BODY));
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue(REPLAYED)).isEmpty();

        int before = dataSource.connections();
        HttpResponse<byte[]> retry = send(pay(key, BODY));

        assertThat(dataSource.connections()).as("connections taken by the replay").isEqualTo(before);
        assertReplayOf(retry, first);
        assertThat(LedgerServlet.runs(key)).isEqualTo(1);
        // Exactly what PostgreSQL committed: status, stored headers, body.
        StoredResponse stored = jdbc.inspect(IdempotencyKey.of(SCOPE, key)).orElseThrow().response().orElseThrow();
        assertThat(retry.statusCode()).isEqualTo(stored.status());
        assertThat(retry.body()).isEqualTo(stored.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first(stored.headers().get("Location")));
        assertThat(retry.headers().allValues("Set-Cookie")).as("never stored, never replayed").isEmpty();
    }

    @Test
    void aDuplicateInFlightIs409WithoutAConnection() throws Exception {
        CompletableFuture<HttpResponse<byte[]>> first = http.sendAsync(pay(key, BODY).header(HOLD, "true").build(),
                BodyHandlers.ofByteArray());
        await().atMost(BOUND).until(() -> LedgerServlet.running(key));

        int before = dataSource.connections();
        HttpResponse<byte[]> duplicate = send(pay(key, BODY));

        assertThat(dataSource.connections()).as("connections taken by the duplicate").isEqualTo(before);
        assertProblem(duplicate, 409, "/problems/request-in-progress");
        assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("1");

        LedgerServlet.release(key);
        HttpResponse<byte[]> done = first.get(BOUND.toSeconds(), TimeUnit.SECONDS);
        assertThat(done.statusCode()).isEqualTo(201);
        int afterCommit = dataSource.connections();
        HttpResponse<byte[]> retry = send(pay(key, BODY));
        assertReplayOf(retry, done);
        assertThat(dataSource.connections()).as("the marker was replaced by the response").isEqualTo(afterCommit);
        assertThat(LedgerServlet.runs(key)).isEqualTo(1);
    }

    @Test
    void aKeyReusedForAnotherRequestIs422FromTheCache() throws Exception {
        assertThat(send(pay(key, BODY)).statusCode()).isEqualTo(201);

        int before = dataSource.connections();
        HttpResponse<byte[]> other = send(pay(key, "{\"amount\":200}"));

        assertThat(dataSource.connections()).isEqualTo(before);
        assertProblem(other, 422, "/problems/key-reused");
        assertThat(LedgerServlet.runs(key)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ answered from this process's memory

    /**
     * With the local tier, a retry of a key this process stored is answered from memory: with Redis killed, it
     * still takes no connection, and a key reused for another request is still 422. Another caller's key of the
     * same value is not answered from it, and past the tier's TTL the retry goes to Redis and PostgreSQL again.
     */
    @Test
    void aRetryOfAKeyThisProcessStoredIsAnsweredFromMemoryWithoutRedisOrAConnection() throws Exception {
        AtomicLong clock = new AtomicLong();
        tomcat.close();
        tomcat = serve(dir.resolve("local"), FastFilterExecutor.builder(
                new JdbcTransactionalExecutor(transactional, dataSource), fastFilter, transactional.engine())
                .localReplays(1 << 20, Duration.ofMinutes(1)).nanoTime(clock::get).build());
        HttpResponse<byte[]> first = send(pay(key, BODY));
        assertThat(first.statusCode()).isEqualTo(201);
        fastFilter.ping(); // the publish the answer did not wait for is in Redis
        redis.kill();

        int before = dataSource.connections();
        assertReplayOf(send(pay(key, BODY)), first);
        assertProblem(send(pay(key, "{\"amount\":200}")), 422, "/problems/key-reused");
        assertThat(dataSource.connections()).as("connections taken by the answers from memory").isEqualTo(before);
        assertThat(recorder.failures).as("calls to the killed Redis").isEmpty();
        assertThat(LedgerServlet.runs(key)).isEqualTo(1);

        HttpResponse<byte[]> bob = send(pay(key, BODY).setHeader("X-User", "bob"));
        assertThat(bob.statusCode()).as("another caller's key of the same value").isEqualTo(201);
        assertThat(bob.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(LedgerServlet.runs(key)).isEqualTo(2);

        clock.addAndGet(Duration.ofMinutes(1).toNanos());
        int beforeExpiry = dataSource.connections();
        assertReplayOf(send(pay(key, BODY)), first);
        assertThat(dataSource.connections()).as("past the TTL, the replay comes from PostgreSQL")
                .isGreaterThan(beforeExpiry);
        assertThat(LedgerServlet.runs(key)).isEqualTo(2);
    }

    /**
     * Two processes on one Redis and one PostgreSQL: a key the first stored is replayed by the second from Redis,
     * and kept in the second's memory, which answers its next retry with Redis gone.
     */
    @Test
    void aResponseReplayedFromRedisIsKeptAndAnswersTheNextRetryFromMemory() throws Exception {
        HttpResponse<byte[]> first = send(pay(key, BODY));
        assertThat(first.statusCode()).isEqualTo(201);
        fastFilter.ping();
        RedisFastFilter secondFilter = RedisFastFilter.builder(client).timeout(REDIS_TIMEOUT).build();
        secondFilter.ping(); // connected before its first look-up, which would otherwise go to PostgreSQL
        try (EmbeddedTomcat second = serve(dir.resolve("second"), FastFilterExecutor.builder(
                new JdbcTransactionalExecutor(transactional, dataSource), secondFilter, transactional.engine())
                .localReplays(1 << 20, Duration.ofMinutes(1)).build())) {
            int before = dataSource.connections();
            assertReplayOf(send(pay(second, key, BODY)), first);
            assertThat(dataSource.connections()).as("replayed from Redis").isEqualTo(before);

            redis.kill();
            assertReplayOf(send(pay(second, key, BODY)), first);
            assertThat(dataSource.connections()).as("replayed from memory").isEqualTo(before);
            assertThat(LedgerServlet.runs(key)).isEqualTo(1);
        } finally {
            secondFilter.close();
        }
    }

    // ------------------------------------------------------------------ published only after commit

    @Test
    void aCommitThatFailsLeavesNothingInRedisAndTheRetryRunsAgain() throws Exception {
        int slot = ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE);
        String blocker = "blocker-" + key;
        update("INSERT INTO " + PAYMENTS + " (ref, slot) VALUES (?, " + slot + ")", blocker);
        try {
            HttpResponse<byte[]> r = send(pay(key, BODY, "?slot=" + slot));

            assertProblem(r, 503, "/problems/store-unavailable");
            assertThat(LedgerServlet.runs(key)).as("the handler ran; its commit failed").isEqualTo(1);
            fastFilter.ping(); // the clear the answer did not wait for is in Redis before the filter's next command
            assertThat(admin.sync().exists(fastFilter.redisKey(IdempotencyKey.of(SCOPE, key))))
                    .as("neither a response nor a marker in Redis").isZero();
        } finally {
            update("DELETE FROM " + PAYMENTS + " WHERE ref = ?", blocker);
        }

        HttpResponse<byte[]> retry = send(pay(key, BODY, "?slot=" + slot));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(LedgerServlet.runs(key)).isEqualTo(2);
        int before = dataSource.connections();
        assertReplayOf(send(pay(key, BODY, "?slot=" + slot)), retry);
        assertThat(dataSource.connections()).isEqualTo(before);
    }

    @Test
    void aReleasedResultIsNotCachedAndTheRetryRunsAgain() throws Exception {
        HttpResponse<byte[]> first = send(pay(key, BODY, "?status=503"));

        assertThat(first.statusCode()).isEqualTo(503);
        fastFilter.ping(); // the clear the answer did not wait for is in Redis before the filter's next command
        assertThat(admin.sync().exists(fastFilter.redisKey(IdempotencyKey.of(SCOPE, key)))).isZero();
        HttpResponse<byte[]> retry = send(pay(key, BODY, "?status=503"));
        assertThat(retry.statusCode()).isEqualTo(503);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(LedgerServlet.runs(key)).isEqualTo(2);
    }

    // ------------------------------------------------------------------ Redis down

    @Test
    void withRedisKilledPostgresAnswersTheBreakerOpensAndRedisServesAgainOnceBack() throws Exception {
        String cachedKey = key;
        HttpResponse<byte[]> cached = send(pay(cachedKey, BODY));
        assertThat(cached.statusCode()).isEqualTo(201);
        // The answer did not wait for its publish; a later command on the filter's connection does.
        fastFilter.ping();

        redis.kill();

        // Everything is still answered correctly, by PostgreSQL.
        int before = dataSource.connections();
        HttpResponse<byte[]> replayWithoutRedis = send(pay(cachedKey, BODY));
        assertReplayOf(replayWithoutRedis, cached);
        assertThat(dataSource.connections()).as("the replay now comes from PostgreSQL").isGreaterThan(before);
        String newKey = UUID.randomUUID().toString();
        HttpResponse<byte[]> created = send(pay(newKey, BODY));
        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(LedgerServlet.runs(newKey)).isEqualTo(1);
        // Each request made one call before its answer (look up or mark) and sent one after it (publish), which
        // the answer did not wait for: four failures once both publishes failed, one short of the threshold.
        await().atMost(BOUND).until(() -> recorder.failures.size() >= 4);
        // A publish fails on Lettuce's event loop, so it may be counted after the next request's look-up.
        assertThat(recorder.failures).containsExactlyInAnyOrder("lookupOrMark", "publish", "lookupOrMark", "publish");
        assertThat(fastFilter.breakerState()).isEqualTo(BreakerState.CLOSED);
        assertReplayOf(send(pay(newKey, BODY)), created);
        assertThat(fastFilter.breakerState()).as("after %s", recorder.failures).isEqualTo(BreakerState.OPEN);
        assertThat(recorder.changes).containsExactly("CLOSED->OPEN");

        // Open: requests no longer try Redis, so none waits for its timeout.
        int failures = recorder.failures.size();
        for (int i = 0; i < 5; i++) {
            assertReplayOf(send(pay(cachedKey, BODY)), cached);
            assertReplayOf(send(pay(newKey, BODY)), created);
            assertProblem(send(pay(newKey, "{\"amount\":300}")), 422, "/problems/key-reused");
        }
        assertThat(recorder.failures).as("Redis calls that failed while the breaker was open").hasSize(failures);
        assertThat(fastFilter.breakerState()).isEqualTo(BreakerState.OPEN);
        assertThat(LedgerServlet.runs(newKey)).isEqualTo(1);

        redis.restart(); // on the same port, empty

        // Past the backoff a probe goes to Redis; once it answers, the breaker closes.
        await().atMost(BOUND).pollInterval(Duration.ofMillis(200)).until(() -> {
            ticker.addAndGet(fastFilter.maxOpenBackoff().toNanos());
            assertReplayOf(send(pay(newKey, BODY)), created);
            return fastFilter.breakerState() == BreakerState.CLOSED;
        });
        assertThat(recorder.changes).startsWith("CLOSED->OPEN", "OPEN->HALF_OPEN").endsWith("HALF_OPEN->CLOSED");

        // The restarted Redis is empty: a replay from PostgreSQL warms it, the next comes from Redis.
        for (String k : List.of(cachedKey, newKey)) {
            HttpResponse<byte[]> original = k.equals(cachedKey) ? cached : created;
            assertReplayOf(send(pay(k, BODY)), original);
            int beforeRedis = dataSource.connections();
            assertReplayOf(send(pay(k, BODY)), original);
            assertThat(dataSource.connections()).as("replay of %s from Redis again", k).isEqualTo(beforeRedis);
        }
        assertThat(LedgerServlet.runs(cachedKey)).isEqualTo(1);
        assertThat(LedgerServlet.runs(newKey)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ helpers

    private HttpRequest.Builder pay(String idempotencyKey, String body) {
        return pay(idempotencyKey, body, "");
    }

    private HttpRequest.Builder pay(EmbeddedTomcat server, String idempotencyKey, String body) {
        return pay(server, idempotencyKey, body, "");
    }

    private HttpRequest.Builder pay(String idempotencyKey, String body, String query) {
        return pay(tomcat, idempotencyKey, body, query);
    }

    private HttpRequest.Builder pay(EmbeddedTomcat server, String idempotencyKey, String body, String query) {
        return HttpRequest.newBuilder(server.uri("/payments" + query)).timeout(BOUND)
                .header("X-User", ALICE).header(KEY, idempotencyKey).header("Content-Type", JSON)
                .POST(BodyPublishers.ofString(body));
    }

    private static HttpResponse<byte[]> send(HttpRequest.Builder request) throws IOException, InterruptedException {
        return http.send(request.build(), BodyHandlers.ofByteArray());
    }

    private static java.util.Optional<String> first(List<String> values) {
        return values == null || values.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(values.get(0));
    }

    private static void update(String sql, String arg) throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, arg);
            ps.executeUpdate();
        }
    }

    // ------------------------------------------------------------------ the application

    /**
     * Writes a payment row on the transaction's connection and answers 201 with a body no second run
     * could repeat; {@code slot} may collide with a deferred unique constraint (failing only at commit),
     * {@code status} sets the status; the header {@link #HOLD} keeps the request in flight until the test
     * releases it.
     */
    static final class LedgerServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
        static final Map<String, CountDownLatch> RELEASE = new ConcurrentHashMap<>();
        static final Map<String, Boolean> RUNNING = new ConcurrentHashMap<>();

        static int runs(String idempotencyKey) {
            AtomicInteger n = RUNS.get(idempotencyKey);
            return n == null ? 0 : n.get();
        }

        static boolean running(String idempotencyKey) {
            return RUNNING.containsKey(idempotencyKey);
        }

        static void release(String idempotencyKey) {
            RELEASE.computeIfAbsent(idempotencyKey, k -> new CountDownLatch(1)).countDown();
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException, ServletException {
            String ref = req.getHeader(KEY);
            RUNS.computeIfAbsent(String.valueOf(ref), k -> new AtomicInteger()).incrementAndGet();
            Connection c = (Connection) req.getAttribute(JdbcTransactionalExecutor.CONNECTION_ATTRIBUTE);
            if (c == null) {
                throw new ServletException("no transaction: the filter did not run");
            }
            req.getInputStream().readAllBytes();
            long id;
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + PAYMENTS
                    + " (ref, slot) VALUES (?, ?) RETURNING id")) {
                ps.setString(1, ref);
                String slot = req.getParameter("slot");
                if (slot == null) {
                    ps.setNull(2, java.sql.Types.INTEGER);
                } else {
                    ps.setInt(2, Integer.parseInt(slot));
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    id = rs.getLong(1);
                }
            } catch (SQLException e) {
                throw new ServletException(e);
            }
            if (req.getHeader(HOLD) != null) {
                RUNNING.put(ref, Boolean.TRUE);
                try {
                    if (!RELEASE.computeIfAbsent(ref, k -> new CountDownLatch(1)).await(BOUND.toSeconds(),
                            TimeUnit.SECONDS)) {
                        throw new ServletException("the test never released the request");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ServletException(e);
                }
            }
            String status = req.getParameter("status");
            resp.setStatus(status == null ? 201 : Integer.parseInt(status));
            resp.setHeader("Location", "/payments/" + id);
            resp.addHeader("Set-Cookie", "session=" + UUID.randomUUID() + "; Path=/; HttpOnly");
            resp.setContentType(JSON);
            resp.getOutputStream().write(("{\"id\":" + id + ",\"nonce\":\"" + UUID.randomUUID() + "\"}").getBytes(UTF_8));
        }
    }
}
