package io.retrysafe.webflux;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;

import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;

/**
 * Redis as the fast filter in front of the store on the non-blocking path: the WebFlux filter on a real
 * Reactor Netty server, {@code RedisFastFilter.async()} on the local Redis, the in-memory store behind it.
 * The store is wrapped in a {@link CountingStore} (a decorator over the real store, not a mock): an answer
 * that made no claim did not ask the store.
 */
class ReactiveFastFilterIT {
    private static final Duration BOUND = Duration.ofSeconds(30);
    /** Generous for a loaded build machine: a timeout would send a request to the store and fail an assertion. */
    private static final Duration REDIS_TIMEOUT = Duration.ofSeconds(1);
    private static final String SCOPE = "global:fast-filter-it";
    private static final HttpRoute PAYMENTS = HttpRoute.of("POST", "/payments").build();
    private static final HttpRoute SLOW = HttpRoute.of("POST", "/slow").build();
    private static final HttpRoute FAILING = HttpRoute.of("POST", "/failing").build();
    private static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
    private static final Map<String, CompletableFuture<Void>> RELEASE = new ConcurrentHashMap<>();
    private static final Map<String, CountDownLatch> STARTED = new ConcurrentHashMap<>();

    private static RedisClient client;
    private static StatefulRedisConnection<String, String> admin;
    private static RedisFastFilter fastFilter;
    private static CountingStore store;
    private static DisposableServer server;
    private static HttpClient http;

    private String testId;
    private String key;

    /** Every claim the engine makes, counted, over the real in-memory store. */
    static final class CountingStore implements AsyncIdempotencyStore {
        private final AsyncIdempotencyStore store;
        private final AtomicInteger claims = new AtomicInteger();

        CountingStore(AsyncIdempotencyStore store) {
            this.store = store;
        }

        int claims() {
            return claims.get();
        }

        @Override
        public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
            claims.incrementAndGet();
            return store.tryClaim(request);
        }

        @Override
        public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
                Duration retention) {
            return store.complete(key, token, response, retention);
        }

        @Override
        public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
            return store.release(key, token);
        }

        @Override
        public boolean canRenewLease() {
            return store.canRenewLease();
        }

        @Override
        public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
            return store.renewLease(key, token, leaseTtl);
        }

        @Override
        public boolean isStandalone() {
            return store.isStandalone();
        }

        @Override
        public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
            return store.inspect(key);
        }

        @Override
        public CompletionStage<Integer> purgeExpired(int limit) {
            return store.purgeExpired(limit);
        }
    }

    @BeforeAll
    static void start() {
        client = RedisClient.create(TestRedis.standaloneUri());
        admin = client.connect();
        fastFilter = RedisFastFilter.builder(client).keyPrefix("retrysafe:ff:webflux-it:" + UUID.randomUUID() + ":")
                .timeout(REDIS_TIMEOUT).build();
        store = new CountingStore(new InMemoryIdempotencyStore().async());
        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).name("webflux-fast-filter-it").build();
        server = serve(engine, ReactiveFastFilterExecutor.builder(ReactiveIdempotentExecutor.standalone(engine),
                fastFilter.async(), engine).build());
        http = TestServer.client();
    }

    private static DisposableServer serve(AsyncRetrySafe engine, ReactiveIdempotentExecutor executor) {
        WebFluxIdempotency config = WebFluxIdempotency.custom().route(PAYMENTS).route(SLOW).route(FAILING)
                .scope(ReactiveScopeResolver.global("fast-filter-it")).build();
        RouterFunction<ServerResponse> routes = RouterFunctions.route()
                .POST("/payments", request -> request.bodyToMono(String.class).flatMap(body -> {
                    int run = RUNS.computeIfAbsent(request.headers().firstHeader("X-Test"), i -> new AtomicInteger())
                            .incrementAndGet();
                    return ServerResponse.status(HttpStatus.CREATED).header("Location", "/payments/" + run)
                            .bodyValue("{\"payment\":\"" + UUID.randomUUID() + "\",\"run\":" + run + "}");
                }))
                .POST("/slow", request -> {
                    String id = request.headers().firstHeader("X-Test");
                    RUNS.computeIfAbsent(id, i -> new AtomicInteger()).incrementAndGet();
                    STARTED.computeIfAbsent(id, i -> new CountDownLatch(1)).countDown();
                    return Mono.fromFuture(RELEASE.computeIfAbsent(id, i -> new CompletableFuture<>()), true)
                            .then(ServerResponse.status(HttpStatus.CREATED).bodyValue("slow done"));
                })
                .POST("/failing", request -> {
                    RUNS.computeIfAbsent(request.headers().firstHeader("X-Test"), i -> new AtomicInteger())
                            .incrementAndGet();
                    return ServerResponse.status(HttpStatus.INTERNAL_SERVER_ERROR).bodyValue("try again");
                })
                .build();
        return TestServer.start(routes, new RetrySafeWebFilter(config, executor, engine.listener()));
    }

    @AfterAll
    static void stop() {
        RELEASE.values().forEach(f -> f.complete(null));
        if (server != null) {
            server.disposeNow();
        }
        if (fastFilter != null) {
            fastFilter.close();
        }
        if (admin != null) {
            admin.close();
        }
        if (client != null) {
            client.shutdown();
        }
    }

    @BeforeEach
    void newIds() {
        testId = UUID.randomUUID().toString();
        key = "key-" + testId;
    }

    private HttpResponse<String> post(DisposableServer to, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + to.port() + path)).timeout(BOUND)
                .header("X-Test", testId).header("Idempotency-Key", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private int runs() {
        return RUNS.computeIfAbsent(testId, i -> new AtomicInteger()).get();
    }

    /** What Redis holds for this test's key on {@code route}: the marker or the cached response, or null. */
    private String cached(HttpRoute route) {
        return admin.sync().get(redisKey(route));
    }

    private String redisKey(HttpRoute route) {
        return fastFilter.redisKey(KeyRules.DEFAULT.key(HttpSemantics.scope(SCOPE, route), key));
    }

    @Test
    void aReplayIsServedFromRedisWithoutAskingTheStore() throws Exception {
        HttpResponse<String> first = post(server, "/payments", "{\"amount\":100}");
        int claims = store.claims();
        HttpResponse<String> retry = post(server, "/payments", "{ \"amount\" : 100 }");

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(cached(PAYMENTS)).as("published once stored").isNotNull();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(store.claims()).as("the replay made no claim").isEqualTo(claims);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aKeyReusedForAnotherRequestIs422FromTheCache() throws Exception {
        post(server, "/payments", "{\"amount\":100}");
        int claims = store.claims();
        HttpResponse<String> other = post(server, "/payments", "{\"amount\":999}");

        assertThat(other.statusCode()).isEqualTo(422);
        assertThat(other.body()).contains("\"type\":\"/problems/key-reused\"");
        assertThat(store.claims()).isEqualTo(claims);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aDuplicateInFlightIs409FromTheMarkerWithoutAskingTheStore() throws Exception {
        CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
            try {
                return post(server, "/slow", "{}");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(STARTED.computeIfAbsent(testId, i -> new CountDownLatch(1)).await(BOUND.toSeconds(), SECONDS))
                .isTrue();
        int claims = store.claims();

        HttpResponse<String> duplicate = post(server, "/slow", "{}");
        RELEASE.computeIfAbsent(testId, i -> new CompletableFuture<>()).complete(null);

        assertThat(duplicate.statusCode()).isEqualTo(409);
        assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(store.claims()).as("the marker answered").isEqualTo(claims);
        assertThat(first.get(BOUND.toSeconds(), SECONDS).statusCode()).isEqualTo(201);
        HttpResponse<String> retry = post(server, "/slow", "{}");
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(store.claims()).isEqualTo(claims);
        assertThat(runs()).isEqualTo(1);
    }

    @Test
    void aReleasedResultClearsTheMarkerAndTheRetryIsClaimedAndRunsAgain() throws Exception {
        int before = store.claims();
        HttpResponse<String> first = post(server, "/failing", "{}");

        assertThat(first.statusCode()).isEqualTo(500);
        assertThat(cached(FAILING)).as("neither a marker nor a response is left").isNull();
        HttpResponse<String> retry = post(server, "/failing", "{}");
        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(store.claims()).as("each attempt claimed the key in the store").isEqualTo(before + 2);
        assertThat(runs()).isEqualTo(2);
    }

    @Test
    void whatRedisDoesNotKnowTheStoreDecidesAndTheAnswerIsThenCached() throws Exception {
        HttpResponse<String> first = post(server, "/payments", "{\"amount\":100}");
        admin.sync().del(redisKey(PAYMENTS));
        int claims = store.claims();

        HttpResponse<String> fromStore = post(server, "/payments", "{\"amount\":100}");
        HttpResponse<String> fromRedis = post(server, "/payments", "{\"amount\":100}");

        assertThat(fromStore.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(fromStore.body()).isEqualTo(first.body());
        assertThat(store.claims()).as("a miss goes to the store, which claims and replays; the next is cached")
                .isEqualTo(claims + 1);
        assertThat(fromRedis.body()).isEqualTo(first.body());
        assertThat(runs()).isEqualTo(1);
    }

    /**
     * With local replays, a retry of a key this process stored is answered from memory: with Redis's copy deleted,
     * the retry neither asks Redis (which would set a marker there) nor claims in the store.
     */
    @Test
    void withLocalReplaysARetryIsAnsweredFromMemoryWithoutRedisOrTheStore() throws Exception {
        CountingStore own = new CountingStore(new InMemoryIdempotencyStore().async());
        AsyncRetrySafe engine = AsyncRetrySafe.builder(own).name("webflux-fast-filter-local").build();
        DisposableServer local = serve(engine, ReactiveFastFilterExecutor.builder(
                ReactiveIdempotentExecutor.standalone(engine), fastFilter.async(), engine)
                .localReplays(1 << 20, Duration.ofMinutes(1)).build());
        try {
            HttpResponse<String> first = post(local, "/payments", "{\"amount\":100}");
            assertThat(first.statusCode()).isEqualTo(201);
            fastFilter.ping(); // the publish the answer did not wait for is in Redis
            admin.sync().del(redisKey(PAYMENTS));
            int claims = own.claims();

            HttpResponse<String> retry = post(local, "/payments", "{\"amount\":100}");
            HttpResponse<String> other = post(local, "/payments", "{\"amount\":5}");

            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(retry.body()).isEqualTo(first.body());
            assertThat(other.statusCode()).isEqualTo(422);
            assertThat(own.claims()).as("no claim in the store").isEqualTo(claims);
            assertThat(cached(PAYMENTS)).as("Redis was not asked: no marker was set").isNull();
            assertThat(runs()).isEqualTo(1);
        } finally {
            local.disposeNow();
        }
    }

    @Test
    void withRedisUnreachableTheStoreDecidesEverything() throws Exception {
        RedisClient nowhere = RedisClient.create("redis://127.0.0.1:1");
        CountingStore own = new CountingStore(new InMemoryIdempotencyStore().async());
        AsyncRetrySafe engine = AsyncRetrySafe.builder(own).name("webflux-fast-filter-down").build();
        try (RedisFastFilter down = RedisFastFilter.builder(nowhere).timeout(Duration.ofMillis(200)).build()) {
            DisposableServer degraded = serve(engine, ReactiveFastFilterExecutor.builder(
                    ReactiveIdempotentExecutor.standalone(engine), down.async(), engine).build());
            try {
                HttpResponse<String> first = post(degraded, "/payments", "{\"amount\":100}");
                HttpResponse<String> retry = post(degraded, "/payments", "{\"amount\":100}");
                HttpResponse<String> other = post(degraded, "/payments", "{\"amount\":5}");

                assertThat(first.statusCode()).isEqualTo(201);
                assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                assertThat(retry.body()).isEqualTo(first.body());
                assertThat(other.statusCode()).isEqualTo(422);
                assertThat(own.claims()).as("every request went to the store").isEqualTo(3);
                assertThat(runs()).isEqualTo(1);
            } finally {
                degraded.disposeNow();
            }
        } finally {
            nowhere.shutdown();
        }
    }
}
