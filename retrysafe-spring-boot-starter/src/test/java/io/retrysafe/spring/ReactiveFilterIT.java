package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.webflux.R2dbcTransactionalExecutor;
import io.retrysafe.webflux.ReactiveIdempotentExecutor;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableReactiveWebApplicationContext;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.http.server.reactive.observation.ServerRequestObservationContext;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A WebFlux application wired by the starter alone, served by Reactor Netty, on the real PostgreSQL over
 * R2DBC (Boot's ConnectionFactory and R2dbcTransactionManager from {@code spring.r2dbc.*}), in each mode:
 * the first request runs the handler, which inserts a payment; a retry replays its answer without running
 * it; the key reused with another body is refused with 422; concurrent duplicates run the handler once;
 * every request moves the same meters as on the servlet filter. In transactional mode (the default with
 * this store) a 5xx rolls the handler's insert back with the key; standalone, the insert stays.
 */
@Tag("reactive")
class ReactiveFilterIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    private static final String RECORDS = "rs_reactive_records_" + SUFFIX;
    private static final String PAYMENTS = "rs_reactive_payments_" + SUFFIX;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, BootLine.R2DBC,
                    BootLine.R2DBC_TRANSACTION_MANAGER, BootLine.WEBFLUX, BootLine.HTTP_HANDLER,
                    RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
                    RetrySafeWebAutoConfiguration.class, RetrySafeReactiveAutoConfiguration.class,
                    RetrySafePurgeAutoConfiguration.class, RetrySafeIdempotentAutoConfiguration.class))
            .withUserConfiguration(App.class)
            .withPropertyValues(SpringR2dbc.properties())
            .withPropertyValues("retrysafe.name=reactive", "retrysafe.store.table=" + RECORDS,
                    "retrysafe.store.initialize-schema=true", "retrysafe.http.scope=header",
                    "retrysafe.http.scope-header=X-User", "retrysafe.http.routes[0].method=POST",
                    "retrysafe.http.routes[0].pattern=/payments", "retrysafe.http.routes[0].json-members=/amount");

    @BeforeAll
    static void createPayments() throws Exception {
        execute("CREATE TABLE " + PAYMENTS + " (id BIGSERIAL PRIMARY KEY, amount TEXT NOT NULL)");
    }

    @AfterAll
    static void dropTables() throws Exception {
        execute("DROP TABLE IF EXISTS " + PAYMENTS);
        SpringPostgres.drop(RECORDS);
    }

    /** A handler that inserts a payment over R2DBC and answers 201 with its id. */
    @Configuration(proxyBeanMethods = false)
    static class App {
        @Bean
        SimpleMeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }

        @Bean
        RouterFunction<ServerResponse> payments(ConnectionFactory connections) {
            DatabaseClient db = DatabaseClient.create(connections);
            return RouterFunctions.route().POST("/payments", request -> request.bodyToMono(String.class)
                    .flatMap(body -> db.sql("INSERT INTO " + PAYMENTS + " (amount) VALUES (:amount) RETURNING id")
                            .bind("amount", body).map(row -> row.get("id", Long.class)).one()
                            // A 5xx after the write: the transaction, when there is one, is rolled back.
                            .flatMap(id -> body.contains("fail") ? ServerResponse.status(500).build()
                                    : ServerResponse.status(201).header("Location", "/payments/" + id)
                                            .bodyValue("{\"payment\":" + id + "}"))))
                    .build();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"transactional", "standalone"})
    void createdThenReplayedThenRefusedForAnotherBodyWithTheMeters(String mode) {
        served(mode, base -> {
            String key = UUID.randomUUID().toString();
            HttpResponse<String> first = post(base, key, "alice", "{\"amount\":10}");
            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
            long payment = payments();

            HttpResponse<String> retry = post(base, key, "alice", "{ \"amount\" : 10 }");
            assertThat(retry.statusCode()).isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
            assertThat(retry.body()).isEqualTo(first.body());

            HttpResponse<String> reused = post(base, key, "alice", "{\"amount\":11}");
            assertThat(reused.statusCode()).isEqualTo(422);
            assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(reused.body()).contains("\"status\":422");

            // Another caller's same key is another intent.
            assertThat(post(base, key, "bob", "{\"amount\":10}").statusCode()).isEqualTo(201);
            assertThat(payments()).isEqualTo(payment + 1);

            assertThat(requests("executed")).isEqualTo(2.0);
            assertThat(requests("replayed")).isEqualTo(1.0);
            assertThat(requests("mismatch")).isEqualTo(1.0);
            assertThat(meters.get(MicrometerRetrySafeListener.COMPLETIONS).tags("completion", "stored")
                    .counter().count()).isEqualTo(2.0);
            assertThat(meters.get(MicrometerRetrySafeListener.STORE_LATENCY)
                    .tags("store", context.getBean(R2dbcIdempotencyStore.class).name(), "operation", "claim")
                    .timer().count()).isEqualTo(4);
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"transactional", "standalone"})
    void concurrentDuplicatesRunTheHandlerOnce(String mode) {
        served(mode, base -> {
            long before = payments();
            String key = UUID.randomUUID().toString();
            List<CompletableFuture<HttpResponse<String>>> calls = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                calls.add(http.sendAsync(request(base, key, "carol", "{\"amount\":5}"), BodyHandlers.ofString()));
            }
            List<Integer> statuses = calls.stream().map(CompletableFuture::join).map(HttpResponse::statusCode).toList();
            // The one that ran, replays of it, and 409 for those that came while it ran (standalone) or that
            // waited past the lock timeout for its transaction (transactional).
            assertThat(statuses).isSubsetOf(201, 409).contains(201);
            assertThat(payments()).isEqualTo(before + 1);
            assertThat(requests("executed")).isEqualTo(1.0);
            assertThat(requests("executed") + requests("replayed") + requests("in_progress")).isEqualTo(16.0);
        });
    }

    @Test
    void transactionalByDefaultAServerErrorRollsTheHandlersWriteBackWithTheKey() {
        served(null, base -> {
            assertThat(context.getBean(ReactiveIdempotentExecutor.class)).isInstanceOf(R2dbcTransactionalExecutor.class);
            long before = payments();
            String key = UUID.randomUUID().toString();
            assertThat(post(base, key, "dave", "{\"amount\":\"fail\"}").statusCode()).isEqualTo(500);
            assertThat(payments()).isEqualTo(before);
            // The key was released with the rest: a retry runs the handler again.
            assertThat(post(base, key, "dave", "{\"amount\":\"fail\"}").statusCode()).isEqualTo(500);
            assertThat(payments()).isEqualTo(before);
            assertThat(meters.get(MicrometerRetrySafeListener.COMPLETIONS).tags("completion", "released")
                    .counter().count()).isEqualTo(2.0);
        });
    }

    @Test
    void standaloneTheHandlersWriteStaysAfterAServerError() {
        served("standalone", base -> {
            assertThat(context.getBean(ReactiveIdempotentExecutor.class))
                    .isNotInstanceOf(R2dbcTransactionalExecutor.class);
            long before = payments();
            assertThat(post(base, UUID.randomUUID().toString(), "erin", "{\"amount\":\"fail\"}").statusCode())
                    .isEqualTo(500);
            assertThat(payments()).isEqualTo(before + 1);
        });
    }

    /**
     * Spring's own observation of each exchange, {@code http.server.requests}: a replay, answered by the filter
     * before WebFlux matched a handler, carries its route as the first request does, not {@code uri="UNKNOWN"}.
     */
    @Test
    void aReplayIsTaggedWithItsRouteInSpringsHttpObservationAsTheFirstRequestIs() {
        List<String> uris = new CopyOnWriteArrayList<>();
        ObservationRegistry observations = ObservationRegistry.create();
        observations.observationConfig().observationHandler(new ObservationHandler<ServerRequestObservationContext>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return context instanceof ServerRequestObservationContext;
            }

            @Override
            public void onStop(ServerRequestObservationContext context) {
                KeyValue uri = context.getLowCardinalityKeyValue("uri");
                uris.add(uri == null ? "none" : uri.getValue());
            }
        });
        served(runner.withBean(ObservationRegistry.class, () -> observations), null, base -> {
            String key = UUID.randomUUID().toString();
            assertThat(post(base, key, "frank", "{\"amount\":12}").statusCode()).isEqualTo(201);
            assertThat(post(base, key, "frank", "{\"amount\":12}").headers().firstValue("Idempotent-Replayed"))
                    .hasValue("true");

            // The observation ends with the exchange, which may be just after the client has read the answer.
            await().atMost(Duration.ofSeconds(10)).until(() -> uris.size() >= 2);
            assertThat(uris).containsExactly("/payments", "/payments");
        });
    }

    private AssertableReactiveWebApplicationContext context;
    private MeterRegistry meters;

    /**
     * Runs {@code test} against the application served by Reactor Netty on a free port.
     *
     * @param mode {@code retrysafe.mode}, or null for the default
     */
    private void served(String mode, Consumer<String> test) {
        served(runner, mode, test);
    }

    private void served(ReactiveWebApplicationContextRunner runner, String mode, Consumer<String> test) {
        runner.withPropertyValues(mode == null ? new String[0] : new String[] {"retrysafe.mode=" + mode}).run(context -> {
            assertThat(context).hasNotFailed();
            DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
                    .handle(new ReactorHttpHandlerAdapter(context.getBean(HttpHandler.class))).bindNow();
            this.context = context;
            this.meters = context.getBean(MeterRegistry.class);
            try {
                test.accept("http://127.0.0.1:" + server.port());
            } finally {
                server.disposeNow();
            }
        });
    }

    private double requests(String outcome) {
        return meters.get(MicrometerRetrySafeListener.REQUESTS)
                .tags("name", "reactive", "source", "http", "outcome", outcome).counter().count();
    }

    private static HttpRequest request(String base, String key, String user, String body) {
        return HttpRequest.newBuilder(URI.create(base + "/payments")).timeout(Duration.ofSeconds(30))
                .header("Idempotency-Key", key).header("X-User", user).header("Content-Type", "application/json")
                .POST(BodyPublishers.ofString(body)).build();
    }

    private HttpResponse<String> post(String base, String key, String user, String body) {
        try {
            return http.send(request(base, key, user, body), BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static long payments() {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + PAYMENTS)) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static void execute(String sql) throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
