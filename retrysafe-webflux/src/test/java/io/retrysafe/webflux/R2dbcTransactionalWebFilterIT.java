package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.r2dbc.pool.ConnectionPool;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.KeyRules;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.TransactionalR2dbcRetrySafe;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.transaction.reactive.TransactionalOperator;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * The WebFlux filter in transactional mode, on a real Reactor Netty server and PostgreSQL over R2DBC,
 * with BlockHound watching the event loops: the handler's insert through Spring's {@code DatabaseClient}
 * (inside a {@code TransactionalOperator} of its own, which joins) commits with the key and the
 * response, or rolls back with them; a duplicate waits in the database and replays.
 */
class R2dbcTransactionalWebFilterIT {
    private static final String TABLE = "retrysafe_webflux_tx";
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final HttpRoute PAYMENTS = HttpRoute.of("POST", "/payments").build();
    private static final HttpRoute FLAKY = HttpRoute.of("POST", "/flaky").build();
    private static final HttpRoute BROKEN = HttpRoute.of("POST", "/broken").build();
    private static final HttpRoute SLOW = HttpRoute.of("POST", "/slow").build();
    private static final HttpRoute TICKETS = HttpRoute.of("POST", "/tickets").build();
    private static final HttpRoute BIG_TICKETS = HttpRoute.of("POST", "/big-tickets").build();
    private static final int MAX_RESPONSE_BYTES = 4096;
    /** A ticket's answer on /big-tickets: past the bound, so it is sent as written, before the commit. */
    private static final String BIG = "t".repeat(2 * MAX_RESPONSE_BYTES);
    /** Runs of a handler, per test id. */
    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    /** A slow payment waits, after its insert, for its test to release it; its start is counted down first. */
    private static final Map<String, CompletableFuture<Void>> RELEASE = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> STARTED = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> CANCELLED = new ConcurrentHashMap<>();

    private static ConnectionPool pool;
    private static R2dbcIdempotencyStore store;
    private static DatabaseClient database;
    private static TransactionalOperator handlerTransactions;
    private static DisposableServer server;
    private static HttpClient http;

    private String testId;
    private String key;

    @BeforeAll
    static void start() throws Exception {
        pool = TestDatabase.pool();
        store = R2dbcIdempotencyStore.builder(pool).table(TABLE).build();
        store.createSchema().toCompletableFuture().get(30, SECONDS);
        database = DatabaseClient.create(pool);
        database.sql("CREATE TABLE IF NOT EXISTS webflux_tx_payment (id BIGSERIAL PRIMARY KEY, test_id TEXT NOT NULL, "
                + "body TEXT NOT NULL)").then().block(BOUND);
        // Its uniqueness is checked at commit: a duplicate ticket passes the handler and fails the commit.
        database.sql("CREATE TABLE IF NOT EXISTS webflux_tx_ticket (code TEXT NOT NULL, "
                + "CONSTRAINT webflux_tx_ticket_code UNIQUE (code) DEFERRABLE INITIALLY DEFERRED)").then().block(BOUND);
        R2dbcTransactionManager transactionManager = new R2dbcTransactionManager(pool);
        handlerTransactions = TransactionalOperator.create(transactionManager);

        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).name("webflux-tx-it").build();
        WebFluxIdempotency config = WebFluxIdempotency.custom()
                .route(PAYMENTS).route(FLAKY).route(BROKEN).route(SLOW).route(TICKETS).route(BIG_TICKETS)
                .scope(ReactiveScopeResolver.principal())
                .maxResponseBytes(MAX_RESPONSE_BYTES)
                .build();
        RouterFunction<ServerResponse> routes = RouterFunctions.route()
                .POST("/payments", request -> insert(request).flatMap(R2dbcTransactionalWebFilterIT::created))
                .POST("/flaky", request -> insert(request).flatMap(row -> row.run() == 1
                        ? Mono.error(new IllegalStateException("the first run fails after its insert"))
                        : created(row)))
                .POST("/broken", request -> insert(request).flatMap(row -> row.run() == 1
                        ? ServerResponse.status(HttpStatus.SERVICE_UNAVAILABLE).bodyValue("try again")
                        : created(row)))
                .POST("/slow", request -> insert(request).flatMap(row -> {
                    STARTED.computeIfAbsent(row.testId(), i -> new CountDownLatch(1)).countDown();
                    return Mono.fromFuture(RELEASE.computeIfAbsent(row.testId(), i -> new CompletableFuture<>()), true)
                            .doOnCancel(() -> CANCELLED.computeIfAbsent(row.testId(), i -> new CountDownLatch(1))
                                    .countDown())
                            .then(created(row));
                }))
                .POST("/tickets", request -> request.bodyToMono(String.class).flatMap(code -> database
                        .sql("INSERT INTO webflux_tx_ticket (code) VALUES (:code)").bind("code", code).then())
                        .then(ServerResponse.status(HttpStatus.CREATED).bodyValue("ticket issued")))
                .POST("/big-tickets", request -> request.bodyToMono(String.class).flatMap(code -> database
                        .sql("INSERT INTO webflux_tx_ticket (code) VALUES (:code)").bind("code", code).then())
                        .then(ServerResponse.status(HttpStatus.CREATED).bodyValue(BIG)))
                .build();
        server = TestServer.start(routes, new RetrySafeWebFilter(config,
                new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(engine), pool, transactionManager),
                engine.listener()));
        http = TestServer.client();
    }

    @AfterAll
    static void stop() {
        RELEASE.values().forEach(f -> f.complete(null));
        if (server != null) {
            server.disposeNow();
        }
    }

    @BeforeEach
    void newIds() {
        testId = UUID.randomUUID().toString();
        key = "key-" + testId;
    }

    private record Row(String testId, int run, long id) {
    }

    /** The handler's write: through DatabaseClient, in a transaction of its own that joins the filter's. */
    private static Mono<Row> insert(ServerRequest request) {
        String id = request.headers().firstHeader("X-Test");
        return request.bodyToMono(String.class).defaultIfEmpty("").flatMap(body -> {
            int run = RUNS.computeIfAbsent(id, i -> new AtomicInteger()).incrementAndGet();
            return handlerTransactions.transactional(database
                    .sql("INSERT INTO webflux_tx_payment (test_id, body) VALUES (:test, :body) RETURNING id")
                    .bind("test", id).bind("body", body)
                    .map(row -> row.get("id", Long.class)).one())
                    .map(rowId -> new Row(id, run, rowId));
        });
    }

    private static Mono<ServerResponse> created(Row row) {
        return ServerResponse.status(HttpStatus.CREATED).header("Location", "/payments/" + row.id())
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"payment\":" + row.id() + ",\"run\":" + row.run() + "}");
    }

    private int runs() {
        return RUNS.computeIfAbsent(testId, i -> new AtomicInteger()).get();
    }

    /** Committed business rows of this test. */
    private long rows() {
        return database.sql("SELECT count(*) AS n FROM webflux_tx_payment WHERE test_id = :test").bind("test", testId)
                .map(row -> row.get("n", Long.class)).one().block(BOUND);
    }

    /** The committed record of this test's key, for alice on {@code route}. */
    private Optional<IdempotencyRecord> record(HttpRoute route) throws Exception {
        return store.inspect(KeyRules.DEFAULT.key(HttpSemantics.scope("principal:alice", route), key)).toCompletableFuture()
                .get(BOUND.toSeconds(), SECONDS);
    }

    private HttpRequest.Builder post(String path, String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path)).timeout(BOUND)
                .header("X-Test", testId).header("X-User", "alice").header("Idempotency-Key", key)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body));
    }

    private HttpResponse<String> send(String path, String body) throws Exception {
        return http.send(post(path, body).build(), HttpResponse.BodyHandlers.ofString());
    }

    private CompletableFuture<HttpResponse<String>> sendAsync(String path, String body) {
        return http.sendAsync(post(path, body).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void blockHoundIsWatchingTheEventLoops() {
        Mono<Long> sleeper = Mono.delay(Duration.ofMillis(1)).doOnNext(tick -> {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });

        assertThatThrownBy(() -> sleeper.block(BOUND)).hasCauseInstanceOf(BlockingOperationError.class);
    }

    @Test
    void theHandlersInsertAndTheKeyCommitTogether() throws Exception {
        HttpResponse<String> response = send("/payments", "{\"amount\":100}");

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(rows()).isEqualTo(1);
        assertThat(record(PAYMENTS)).hasValueSatisfying(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.response()).hasValueSatisfying(stored -> assertThat(new String(stored.body(), UTF_8))
                    .isEqualTo(response.body()));
        });
    }

    @Test
    void aReplayDoesNotRunTheHandlerNorRepeatItsWrites() throws Exception {
        HttpResponse<String> first = send("/payments", "{\"amount\":100}");
        HttpResponse<String> retry = send("/payments", "{ \"amount\" : 100 }");

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(runs()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void aHandlerThatThrowsCommitsNothingAndARetryRunsAgain() throws Exception {
        HttpResponse<String> failed = send("/flaky", "{\"amount\":100}");

        assertThat(failed.statusCode()).isEqualTo(500);
        assertThat(rows()).as("the handler's insert was rolled back with the key").isZero();
        assertThat(record(FLAKY)).as("the key is free").isEmpty();

        HttpResponse<String> retry = send("/flaky", "{\"amount\":100}");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(runs()).isEqualTo(2);
        assertThat(rows()).isEqualTo(1);
        assertThat(record(FLAKY)).hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED));
    }

    @Test
    void aServerErrorAnswerIsSentButCommitsNothingAndARetryRunsAgain() throws Exception {
        HttpResponse<String> failed = send("/broken", "{\"amount\":100}");

        assertThat(failed.statusCode()).isEqualTo(503);
        assertThat(failed.body()).isEqualTo("try again");
        assertThat(rows()).isZero();
        assertThat(record(BROKEN)).isEmpty();

        HttpResponse<String> retry = send("/broken", "{\"amount\":100}");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(runs()).isEqualTo(2);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherBodyIsRefusedWith422AndWritesNothing() throws Exception {
        send("/payments", "{\"amount\":100}");
        HttpResponse<String> other = send("/payments", "{\"amount\":999}");

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(runs()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void aDuplicateWaitsInTheDatabaseForTheFirstToCommitThenReplays() throws Exception {
        CompletableFuture<HttpResponse<String>> first = sendAsync("/slow", "{}");
        assertThat(STARTED.computeIfAbsent(testId, i -> new CountDownLatch(1)).await(BOUND.toSeconds(), SECONDS))
                .isTrue();

        CompletableFuture<HttpResponse<String>> duplicate = sendAsync("/slow", "{}");
        await().atMost(BOUND).until(() -> database.sql("SELECT count(*) AS n FROM pg_stat_activity "
                        + "WHERE datname = current_database() AND wait_event_type = 'Lock'")
                .map(row -> row.get("n", Long.class)).one().block(BOUND), n -> n >= 1);
        assertThat(rows()).as("nothing is committed while the first runs").isZero();
        RELEASE.computeIfAbsent(testId, i -> new CompletableFuture<>()).complete(null);

        assertThat(first.get(BOUND.toSeconds(), SECONDS).statusCode()).isEqualTo(201);
        HttpResponse<String> replay = duplicate.get(BOUND.toSeconds(), SECONDS);
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(first.get().body());
        assertThat(runs()).isEqualTo(1);
        assertThat(rows()).isEqualTo(1);
    }

    @Test
    void manyConcurrentDuplicatesWriteOneRowAndAllGetTheSameAnswerOrA409() throws Exception {
        int clients = 32;
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            answers.add(sendAsync("/payments", "{\"amount\":100}"));
        }
        CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(BOUND.toSeconds(), SECONDS);

        assertThat(rows()).isEqualTo(1);
        assertThat(runs()).isEqualTo(1);
        List<HttpResponse<String>> created = answers.stream().map(CompletableFuture::join)
                .filter(a -> a.statusCode() == 201).toList();
        assertThat(created).filteredOn(a -> a.headers().firstValue("Idempotent-Replayed").isEmpty())
                .as("exactly one answer is the handler's own").hasSize(1);
        assertThat(created).extracting(HttpResponse::body).containsOnly(created.get(0).body());
        for (CompletableFuture<HttpResponse<String>> answer : answers) {
            HttpResponse<String> a = answer.join();
            if (a.statusCode() != 201) {
                assertThat(a.statusCode()).isEqualTo(409);
                assertThat(a.headers().firstValue("Retry-After")).isPresent();
                assertThat(a.body()).contains("\"type\":\"/problems/request-in-progress\"");
            }
        }
    }

    @Test
    void aFailedCommitIsA503AndNeverTheHandlersSuccess() throws Exception {
        String code = "{\"ticket\":\"" + testId + "\"}";
        database.sql("INSERT INTO webflux_tx_ticket (code) VALUES (:code)").bind("code", code).then().block(BOUND);

        HttpResponse<String> response = send("/tickets", code);

        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.headers().firstValue("Retry-After")).isPresent();
        assertThat(response.body()).contains("\"type\":\"/problems/store-unavailable\"").doesNotContain("issued");
        assertThat(record(TICKETS)).as("the key went with the failed commit").isEmpty();
        assertThat(database.sql("SELECT count(*) AS n FROM webflux_tx_ticket WHERE code = :code").bind("code", code)
                .map(row -> row.get("n", Long.class)).one().block(BOUND)).isEqualTo(1);
    }

    @Test
    void aResponseOverTheBoundIsSentAsWrittenAndCommittedWithoutItsBody() throws Exception {
        HttpResponse<String> response = send("/big-tickets", "{\"ticket\":\"" + testId + "\"}");
        HttpResponse<String> replay = send("/big-tickets", "{\"ticket\":\"" + testId + "\"}");

        assertThat(response.statusCode()).isEqualTo(201);
        assertThat(response.body()).isEqualTo(BIG);
        assertThat(record(BIG_TICKETS)).hasValueSatisfying(r -> assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED));
        assertThat(replay.statusCode()).isEqualTo(201);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(String.valueOf(BIG.length()));
        assertThat(replay.body()).isEmpty();
    }

    @Test
    void aResponseOverTheBoundWhoseCommitFailsCommitsNothing() throws Exception {
        String code = "{\"ticket\":\"" + testId + "\"}";
        database.sql("INSERT INTO webflux_tx_ticket (code) VALUES (:code)").bind("code", code).then().block(BOUND);

        try {
            send("/big-tickets", code);
        } catch (IOException cut) {
            // The body went out before the commit: when the commit fails, the connection is cut, which a
            // client that already read the whole body may not notice.
        }

        assertThat(record(BIG_TICKETS)).as("the key went with the failed commit").isEmpty();
        assertThat(database.sql("SELECT count(*) AS n FROM webflux_tx_ticket WHERE code = :code").bind("code", code)
                .map(row -> row.get("n", Long.class)).one().block(BOUND)).isEqualTo(1);
    }

    @Test
    void aCancelledExchangeCommitsNothingAndARetryRunsAgain() throws Exception {
        String body = "{}";
        TestServer.hangUpWhileRunning(server, "/slow", testId, key, body,
                STARTED.computeIfAbsent(testId, i -> new CountDownLatch(1)), BOUND);
        assertThat(CANCELLED.computeIfAbsent(testId, i -> new CountDownLatch(1)).await(BOUND.toSeconds(), SECONDS))
                .as("the handler's subscription was cancelled").isTrue();
        RELEASE.computeIfAbsent(testId, i -> new CompletableFuture<>()).complete(null);

        await().atMost(BOUND).untilAsserted(() -> {
            HttpResponse<String> retry = send("/slow", body);
            assertThat(retry.statusCode()).as("the retry runs, as the key was rolled back").isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        });
        assertThat(runs()).isEqualTo(2);
        assertThat(rows()).as("the cancelled run's insert was rolled back").isEqualTo(1);
    }
}
