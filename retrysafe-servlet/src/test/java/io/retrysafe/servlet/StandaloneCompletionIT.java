package io.retrysafe.servlet;

import static io.retrysafe.servlet.HttpAnswers.assertProblem;
import static io.retrysafe.servlet.HttpAnswers.assertReplayOf;
import static io.retrysafe.servlet.HttpAnswers.post;
import static io.retrysafe.servlet.HttpAnswers.send;
import static io.retrysafe.servlet.HttpAnswers.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.TestRedis;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Standalone mode on the Redis store, as a client sees it: a real Tomcat and a private
 * {@code redis-server}. A handler slower than its lease keeps its key (the engine renews the lease),
 * and a completion that Redis refuses (it is told to refuse writes: {@code min-replicas-to-write}, a
 * real refusal of the real server) is written again, or answered as an unknown outcome.
 */
class StandaloneCompletionIT {
    private static final Duration LEASE = Duration.ofMillis(600);
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final String SCOPE_USER = "alice";

    @TempDir
    static Path dir;

    private static TestRedis.Server redis;
    private static RedisClient client;
    private static StatefulRedisConnection<String, String> admin;
    private static RedisIdempotencyStore store;
    private static EmbeddedTomcat tomcat;
    /** Run by the engine's listener on every failed store call: the test's hook into the moment of failure. */
    private static final AtomicReference<Runnable> ON_COMPLETE_FAILURE = new AtomicReference<>(() -> { });
    private static final List<String> FAILED_OPERATIONS = new CopyOnWriteArrayList<>();

    private String key;

    @BeforeAll
    static void start() throws Exception {
        redis = TestRedis.startServer(dir);
        client = RedisClient.create(redis.uri());
        admin = client.connect();
        store = RedisIdempotencyStore.builder(client).commandTimeout(Duration.ofSeconds(5)).build();
        RetrySafe engine = RetrySafe.builder(store).name("standalone-completion-it")
                .policy(OperationPolicy.custom().leaseTtl(LEASE).retention(Duration.ofHours(1)).build())
                .completionAttempts(4).completionBackoff(Duration.ofMillis(100))
                .listener(new RetrySafeListener() {
                    @Override
                    public void onStoreError(String storeName, String operation, RuntimeException error) {
                        FAILED_OPERATIONS.add(operation);
                        if (operation.equals("complete")) {
                            ON_COMPLETE_FAILURE.get().run();
                        }
                    }
                }).build();
        HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/transfers").build())
                .scope(ScopeResolver.header("X-User")).build();
        tomcat = EmbeddedTomcat.start(dir.resolve("tomcat"), context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.servlet(context, "transfers", new TransferServlet(), "/*");
        });
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            tomcat.close();
        } finally {
            store.close();
            admin.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            redis.close();
        }
    }

    @BeforeEach
    void freshKey() {
        key = UUID.randomUUID().toString();
        FAILED_OPERATIONS.clear();
    }

    @AfterEach
    void writesAgain() {
        ON_COMPLETE_FAILURE.set(() -> { });
        TransferServlet.BEFORE_ANSWER.set(() -> { });
        acceptWrites();
    }

    private static void refuseWrites() {
        // A real refusal: with no replica, Redis answers every script that writes with NOREPLICAS.
        admin.sync().configSet("min-replicas-to-write", "1");
    }

    private static void acceptWrites() {
        admin.sync().configSet("min-replicas-to-write", "0");
    }

    @Test
    void aHandlerSlowerThanItsLeaseRunsOnceWhileDuplicatesKeepArriving() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        String held = key;
        // Only the first run waits: a second one (a takeover) answers at once, and the assertions say so.
        TransferServlet.BEFORE_ANSWER.set(() -> {
            if (TransferServlet.runs(held) == 1) {
                awaitRelease(release);
            }
        });
        ExecutorService pool = Executors.newFixedThreadPool(5);
        try {
            Future<HttpResponse<byte[]>> first = pool.submit(() -> send(transfer(key)));
            await().atMost(BOUND).until(() -> TransferServlet.runs(key) == 1);
            Instant claimed = record().createdAt();
            // Duplicates from four clients, until well past the lease the first attempt started with.
            Instant pastTheLease = claimed.plus(LEASE.multipliedBy(4));
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger lateDuplicates = new AtomicInteger();
            List<Future<List<Integer>>> duplicates = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                duplicates.add(pool.submit(() -> {
                    List<Integer> statuses = new ArrayList<>();
                    while (!stop.get()) {
                        Instant sent = Instant.now();
                        statuses.add(send(transfer(key)).statusCode());
                        if (sent.isAfter(pastTheLease)) {
                            lateDuplicates.incrementAndGet();
                        }
                    }
                    return statuses;
                }));
            }
            await().atMost(BOUND).until(() -> lateDuplicates.get() >= 8);
            stop.set(true);
            List<Integer> statuses = new ArrayList<>();
            for (Future<List<Integer>> d : duplicates) {
                statuses.addAll(d.get(BOUND.toSeconds(), TimeUnit.SECONDS));
            }
            release.countDown();
            HttpResponse<byte[]> done = first.get(BOUND.toSeconds(), TimeUnit.SECONDS);

            assertThat(statuses).as("every duplicate while the first ran").isNotEmpty().containsOnly(409);
            assertThat(done.statusCode()).isEqualTo(201);
            assertThat(TransferServlet.runs(key)).as("runs of a handler slower than its lease").isEqualTo(1);
            assertReplayOf(send(transfer(key)), done);
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
    }

    @Test
    void aCompletionRefusedOnceIsWrittenAgainAndTheClientGetsTheRealAnswer() throws Exception {
        TransferServlet.BEFORE_ANSWER.set(StandaloneCompletionIT::refuseWrites);
        ON_COMPLETE_FAILURE.set(StandaloneCompletionIT::acceptWrites);

        HttpResponse<byte[]> first = send(transfer(key));

        assertThat(FAILED_OPERATIONS).as("the first completion was refused").contains("complete");
        assertThat(first.statusCode()).as("status of %s", text(first)).isEqualTo(201);
        assertThat(text(first)).contains("\"transfer\":");
        assertThat(record().status()).isEqualTo(RecordStatus.COMPLETED);
        assertReplayOf(send(transfer(key)), first);
        assertThat(TransferServlet.runs(key)).isEqualTo(1);
    }

    @Test
    void aCompletionRefusedEveryTimeIsAnUnknownOutcomeNotARetryPromise() throws Exception {
        TransferServlet.BEFORE_ANSWER.set(StandaloneCompletionIT::refuseWrites);

        HttpResponse<byte[]> first = send(transfer(key));

        assertProblem(first, 503, "/problems/outcome-unknown");
        assertThat(first.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(text(first)).contains("may have taken effect").doesNotContain("\"transfer\":");
        assertThat(FAILED_OPERATIONS.stream().filter("complete"::equals).count())
                .as("completions tried before answering").isEqualTo(4);
        assertThat(TransferServlet.runs(key)).isEqualTo(1);
        acceptWrites();
        assertThat(record().status()).as("nothing was recorded").isEqualTo(RecordStatus.IN_PROGRESS);
    }

    private IdempotencyRecord record() {
        return store.inspect(IdempotencyKey.of("header:X-User:" + SCOPE_USER + "|POST /transfers", key)).orElseThrow();
    }

    private static void awaitRelease(CountDownLatch latch) {
        try {
            if (!latch.await(BOUND.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the handler");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private HttpRequest.Builder transfer(String idempotencyKey) {
        return post(tomcat.uri("/transfers"), SCOPE_USER, idempotencyKey, "{\"amount\":100}");
    }

    /** Moves money: counts its runs per key, runs the test's hook, answers 201 with a body no second run repeats. */
    static final class TransferServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
        static final AtomicReference<Runnable> BEFORE_ANSWER = new AtomicReference<>(() -> { });

        static int runs(String idempotencyKey) {
            AtomicInteger n = RUNS.get(idempotencyKey);
            return n == null ? 0 : n.get();
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            RUNS.computeIfAbsent(req.getHeader(HttpIdempotency.HEADER), k -> new AtomicInteger()).incrementAndGet();
            req.getInputStream().readAllBytes();
            BEFORE_ANSWER.get().run();
            resp.setStatus(201);
            resp.setContentType("application/json");
            resp.getOutputStream().write(("{\"transfer\":\"" + UUID.randomUUID() + "\"}")
                    .getBytes(StandardCharsets.UTF_8));
        }
    }
}
