package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.KeyRules;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.Admission;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.R2dbcPhaseJournal;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * {@link PhasedExchanges} on a real Reactor Netty server and PostgreSQL over R2DBC, with BlockHound watching the
 * event loops: a handler whose work is a phased operation (reserve an order, charge it at a provider over HTTP,
 * book the charge) gets the WebFlux filter's answers for the filter's inputs, runs once per caller and key, and a
 * retry after a failed attempt resumes after the steps it saved, calling the provider again with the same key.
 */
class PhasedExchangesIT {
    private static final String TABLE = "rs_webflux_phased_it";
    private static final String ORDERS = "rs_webflux_phased_orders_it";
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final HttpRoute ROUTE = HttpRoute.of("POST", "/orders").keyRequired(true).jsonMembers("/item")
            .build();

    /** The operation's answer: 201 with the order's JSON, stored and replayed as it is. */
    private static final ResponseCodec<String> CREATED = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(String order) {
            return StoredResponse.of(201, Map.of("Content-Type", List.of("application/json")), order.getBytes(UTF_8));
        }

        @Override
        public String decode(StoredResponse stored) {
            return new String(stored.body(), UTF_8);
        }
    };

    private static DisposableServer server;
    private static Provider provider;
    private static DatabaseClient database;
    private static R2dbcIdempotencyStore store;
    private static HttpClient http;

    /**
     * The payment provider: charges once per {@code Idempotency-Key} and answers the charge again for the same
     * key. For a description in {@link #loseAnswer}, the first call charges and then answers 503, as a provider
     * whose answer never reached its caller.
     */
    static final class Provider {
        private final Map<String, String> charges = new ConcurrentHashMap<>();
        private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
        private final Set<String> loseAnswer = ConcurrentHashMap.newKeySet();
        private final DisposableServer server;
        private final reactor.netty.http.client.HttpClient client;

        Provider() {
            server = HttpServer.create().host("127.0.0.1").port(0).route(routes -> routes.post("/charges",
                    (request, response) -> request.receive().aggregate().asString(UTF_8).flatMap(description -> {
                        String key = request.requestHeaders().get(HttpSemantics.KEY_HEADER);
                        calls.computeIfAbsent(description, d -> new AtomicInteger()).incrementAndGet();
                        charges.putIfAbsent(key, description);
                        if (loseAnswer.remove(description)) {
                            return response.status(503).send().then();
                        }
                        return response.status(200).sendString(Mono.just("ch_" + key.substring(0, 12))).then();
                    }))).bindNow();
            client = reactor.netty.http.client.HttpClient.create().baseUrl("http://127.0.0.1:" + server.port());
        }

        /** The foreign step's call: the charge's id, or {@link ProviderUnavailable} on anything but 200. */
        CompletableFuture<String> charge(String derivedKey, String description) {
            return client.headers(h -> h.set(HttpSemantics.KEY_HEADER, derivedKey)).post().uri("/charges")
                    .send(ByteBufFlux.fromString(Mono.just(description)))
                    .responseSingle((response, body) -> response.status().code() == 200 ? body.asString(UTF_8)
                            : Mono.error(new ProviderUnavailable(response.status().code())))
                    .toFuture();
        }

        long charged(String description) {
            return charges.values().stream().filter(description::equals).count();
        }

        int calls(String description) {
            return calls.getOrDefault(description, new AtomicInteger()).get();
        }

        /** The keys the provider was called with for {@code description}. */
        Set<String> keys(String description) {
            Set<String> keys = ConcurrentHashMap.newKeySet();
            charges.forEach((key, d) -> {
                if (d.equals(description)) {
                    keys.add(key);
                }
            });
            return keys;
        }
    }

    /** The provider answered something else than a charge. */
    static final class ProviderUnavailable extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ProviderUnavailable(int status) {
            super("the provider answered " + status);
        }
    }

    /** reserve (local: the order's row) → charge (foreign: the provider) → book (local: the charge on the row). */
    private static AsyncPhasedOperation<String, String, Connection> order() {
        return AsyncPhasedOperation.of("order", StepCodec.utf8(), CREATED, (body, phases) -> phases
                .local("reserve", StepCodec.none(), c -> write(c, "INSERT INTO " + ORDERS + " (body) VALUES ($1)", body))
                .thenCompose(none -> phases.foreign("charge", StepCodec.utf8(), key -> provider.charge(key, body)))
                .thenCompose(charge -> phases.local("book", StepCodec.utf8(), c -> write(c, "UPDATE " + ORDERS
                        + " SET charge = $2 WHERE body = $1 AND charge IS NULL", body, charge)
                        .thenApply(none -> "{\"charge\":\"" + charge + "\"}"))));
    }

    private static CompletableFuture<Void> write(Connection c, String sql, String... values) {
        io.r2dbc.spi.Statement statement = c.createStatement(sql);
        for (int i = 0; i < values.length; i++) {
            statement.bind("$" + (i + 1), values[i]);
        }
        return Flux.from(statement.execute()).concatMap(io.r2dbc.spi.Result::getRowsUpdated).then().toFuture();
    }

    @BeforeAll
    static void start() throws Exception {
        store = R2dbcIdempotencyStore.builder(TestDatabase.pool()).table(TABLE).build();
        store.createSchema().toCompletableFuture().get(30, SECONDS);
        database = DatabaseClient.create(TestDatabase.pool());
        database.sql("CREATE TABLE IF NOT EXISTS " + ORDERS + " (body TEXT NOT NULL, charge TEXT)").then().block(BOUND);
        provider = new Provider();
        AsyncPhasedRetrySafe<Connection> phased = AsyncPhasedRetrySafe.builder(
                AsyncRetrySafe.builder(store).name("webflux-phased-it").build(), R2dbcPhaseJournal.of(store)).build();
        PhasedExchanges<Connection> orders = PhasedExchanges.of(phased, ROUTE, KeyRules.DEFAULT,
                ReactiveScopeResolver.principal());
        AsyncPhasedOperation<String, String, Connection> order = order();
        server = TestServer.start(RouterFunctions.route().POST("/orders", request -> request.bodyToMono(byte[].class)
                .defaultIfEmpty(new byte[0])
                .flatMap(body -> orders.admit(request.exchange(), body).flatMap(admission ->
                        admission instanceof Admission.Admitted admitted
                                ? orders.execute(admitted, order, new String(body, UTF_8))
                                        .onErrorResume(ProviderUnavailable.class, e -> Mono.just(
                                                ProblemType.UPSTREAM_UNAVAILABLE.answer("the provider is unavailable; "
                                                        + "retry with the same Idempotency-Key", null, Duration.ofSeconds(1))))
                                : Mono.just(((Admission.Refused) admission).answer())))
                .flatMap(answer -> PhasedExchanges.send(request.exchange().getResponse(), answer))
                .then(Mono.<ServerResponse>empty())).build(), (exchange, chain) -> chain.filter(exchange));
        http = TestServer.client();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.disposeNow();
        }
        if (provider != null) {
            provider.server.disposeNow();
        }
        if (database != null) {
            database.sql("DROP TABLE IF EXISTS " + ORDERS).then().block(BOUND);
            database.sql("DROP TABLE IF EXISTS " + TABLE).then().block(BOUND);
        }
    }

    private static HttpRequest request(String user, String key, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/orders"))
                .timeout(BOUND).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (user != null) {
            b.header("X-User", user);
        }
        if (key != null) {
            b.header(HttpSemantics.KEY_HEADER, key);
        }
        return b.build();
    }

    private static HttpResponse<String> post(String user, String key, String body) throws Exception {
        return http.send(request(user, key, body), HttpResponse.BodyHandlers.ofString(UTF_8));
    }

    private static String newBody() {
        return "{\"item\":\"" + UUID.randomUUID() + "\"}";
    }

    /** The committed order rows of {@code body}; booked ones only when {@code booked}. */
    private static long orders(String body, boolean booked) {
        return database.sql("SELECT count(*) AS n FROM " + ORDERS + " WHERE body = :body"
                        + (booked ? " AND charge IS NOT NULL" : ""))
                .bind("body", body).map(row -> row.get("n", Long.class)).one().block(BOUND);
    }

    private static Optional<IdempotencyRecord> record(String user, String key) throws Exception {
        return store.inspect(KeyRules.DEFAULT.key(HttpSemantics.scope("principal:" + user, ROUTE), key))
                .toCompletableFuture().get(BOUND.toSeconds(), SECONDS);
    }

    @Test
    void theOperationRunsOncePerCallerAndKeyAndItsAnswerIsReplayed() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = newBody();

        HttpResponse<String> first = post("alice", key, body);
        HttpResponse<String> retry = post("alice", key, body.replace(":", ": "));
        HttpResponse<String> bob = post("bob", key, body);

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(first.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(first.headers().firstValue(HttpSemantics.REPLAYED_HEADER)).isEmpty();
        assertThat(first.body()).startsWith("{\"charge\":\"ch_");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).as("the same answer, the body re-serialised").isEqualTo(first.body());
        assertThat(retry.headers().firstValue(HttpSemantics.REPLAYED_HEADER)).hasValue("true");
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.body()).as("another caller's key of the same value is another intent").isNotEqualTo(first.body());
        assertThat(orders(body, true)).as("booked orders: alice's and bob's").isEqualTo(2);
        assertThat(provider.charged(body)).as("charges: alice's and bob's").isEqualTo(2);
        assertThat(provider.calls(body)).isEqualTo(2);
        assertThat(record("alice", key)).map(IdempotencyRecord::status).hasValue(RecordStatus.COMPLETED);
    }

    @Test
    void theFiltersRefusalsComeBeforeAnythingRuns() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = newBody();
        String another = newBody();
        assertThat(post("alice", key, body).statusCode()).isEqualTo(201);

        HttpResponse<String> reused = post("alice", key, another);
        HttpResponse<String> noKey = post("alice", null, another);
        HttpResponse<String> badKey = post("alice", "k".repeat(300), another);
        HttpResponse<String> noCaller = post(null, UUID.randomUUID().toString(), another);
        HttpResponse<String> notJson = post("alice", UUID.randomUUID().toString(), "{\"item\":");

        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(noKey.statusCode()).isEqualTo(400);
        assertThat(noKey.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(noKey.body()).contains("\"type\":\"/problems/", "\"rule\":\"missing\"");
        assertThat(badKey.statusCode()).isEqualTo(400);
        assertThat(badKey.body()).contains("\"type\":\"/problems/");
        assertThat(noCaller.statusCode()).isEqualTo(401);
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(notJson.body()).contains("\"type\":\"/problems/").doesNotContain("Exception");
        assertThat(orders(body, false)).as("orders of the first body: only the first request's").isEqualTo(1);
        assertThat(orders(another, false)).as("orders of the refused requests' body").isZero();
        assertThat(provider.calls(another)).as("provider calls for the refused requests").isZero();
    }

    @Test
    void clientsRacingWithOneKeyMakeOneCharge() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = newBody();
        int clients = 8;

        List<CompletableFuture<HttpResponse<String>>> racing = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            racing.add(http.sendAsync(request("alice", key, body), HttpResponse.BodyHandlers.ofString()));
        }
        List<HttpResponse<String>> answers = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> answer : racing) {
            answers.add(answer.get(BOUND.toSeconds(), SECONDS));
        }

        assertThat(answers).extracting(HttpResponse::statusCode).as("created, replayed or still in progress")
                .allMatch(status -> status == 201 || status == 409);
        assertThat(answers).filteredOn(a -> a.statusCode() == 201
                        && a.headers().firstValue(HttpSemantics.REPLAYED_HEADER).isEmpty())
                .as("answers of the one attempt that ran").hasSize(1);
        assertThat(provider.charged(body)).as("charges").isEqualTo(1);
        assertThat(provider.calls(body)).as("provider calls").isEqualTo(1);
        assertThat(orders(body, false)).as("orders").isEqualTo(1);
        HttpResponse<String> after = post("alice", key, body);
        assertThat(after.statusCode()).isEqualTo(201);
        assertThat(after.headers().firstValue(HttpSemantics.REPLAYED_HEADER)).hasValue("true");
    }

    @Test
    void aRetryAfterTheProvidersAnswerWasLostResumesAfterTheReservationAndIsChargedOnce() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = newBody();
        provider.loseAnswer.add(body);

        HttpResponse<String> first = post("alice", key, body);

        assertThat(first.statusCode()).as(first.body()).isEqualTo(503);
        assertThat(first.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(orders(body, false)).as("the reservation, saved").isEqualTo(1);
        assertThat(orders(body, true)).as("booked orders").isZero();
        assertThat(provider.charged(body)).as("charged, though its caller never heard").isEqualTo(1);
        assertThat(record("alice", key).map(IdempotencyRecord::status)).as("the key, released for the retry")
                .isNotEqualTo(Optional.of(RecordStatus.COMPLETED));

        HttpResponse<String> retry = post("alice", key, body);
        HttpResponse<String> again = post("alice", key, body);

        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
        assertThat(retry.headers().firstValue(HttpSemantics.REPLAYED_HEADER)).isEmpty();
        assertThat(again.statusCode()).isEqualTo(201);
        assertThat(again.headers().firstValue(HttpSemantics.REPLAYED_HEADER)).hasValue("true");
        assertThat(again.body()).isEqualTo(retry.body());
        assertThat(orders(body, false)).as("orders: the retry skipped the saved reservation").isEqualTo(1);
        assertThat(orders(body, true)).as("booked orders").isEqualTo(1);
        assertThat(provider.calls(body)).as("provider calls: the lost one and the retry's").isEqualTo(2);
        assertThat(provider.keys(body)).as("the derived key, the same on both calls").hasSize(1);
        assertThat(provider.charged(body)).as("charges: the provider deduplicated the retry's call").isEqualTo(1);
        assertThat(retry.body()).isEqualTo("{\"charge\":\"ch_" + provider.keys(body).iterator().next().substring(0, 12)
                + "\"}");
    }
}
