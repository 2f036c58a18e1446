package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.ScopeResolver;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import io.retrysafe.webflux.R2dbcTransactionalExecutor;
import io.retrysafe.webflux.ReactiveFastFilterExecutor;
import io.retrysafe.webflux.ReactiveIdempotentExecutor;
import io.retrysafe.webflux.ReactiveScopeResolver;
import io.retrysafe.webflux.RetrySafeWebFilter;
import io.retrysafe.webflux.WebFluxIdempotency;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.ApplicationContextAssertProvider;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;

/**
 * What the starter puts into a reactive (WebFlux) application: the non-blocking store the properties
 * choose, the engine on it with the meters, the WebFlux filter with the servlet filter's settings, none
 * of the servlet filter's beans (and none of these in a servlet application), and the mistakes that stop
 * the application with a message that says what to do.
 */
class RetrySafeReactiveAutoConfigurationTest {

    private static final AutoConfigurations RETRYSAFE = AutoConfigurations.of(
            RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
            RetrySafeWebAutoConfiguration.class, RetrySafeReactiveAutoConfiguration.class,
            RetrySafePurgeAutoConfiguration.class, RetrySafeIdempotentAutoConfiguration.class);

    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON)).withConfiguration(RETRYSAFE)
            .withPropertyValues("retrysafe.http.scope=header", "retrysafe.http.scope-header=X-User");

    /** Counts the handler's runs; answers 201 with the run's number. */
    private static RouterFunction<ServerResponse> payments(AtomicInteger runs) {
        return RouterFunctions.route().POST("/payments", request -> request.bodyToMono(String.class)
                .flatMap(body -> ServerResponse.status(201).header("Location", "/payments/" + runs.incrementAndGet())
                        .bodyValue("run " + runs.get() + " of " + body))).build();
    }

    private static WebTestClient client(ApplicationContext context, AtomicInteger runs) {
        return WebTestClient.bindToRouterFunction(payments(runs))
                .webFilter(context.getBean(RetrySafeWebFilter.class)).build();
    }

    private static WebTestClient.ResponseSpec post(WebTestClient client, String key, String body) {
        return client.post().uri("/payments").header("Idempotency-Key", key).header("X-User", "alice")
                .contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
    }

    @Nested
    class Beans {

        @Test
        void reactiveApplicationGetsTheWebFluxFilterOnTheInMemoryStoreAndNoServletBeans() {
            runner.run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(RetrySafeWebFilter.class).hasSingleBean(AsyncRetrySafe.class)
                        .hasSingleBean(WebFluxIdempotency.class).hasSingleBean(ReactiveScopeResolver.class);
                assertThat(context.getBean(AsyncRetrySafe.class).store().name())
                        .isEqualTo("memory");
                // Nothing of the servlet filter, and no blocking engine nor store that nothing configured.
                assertThat(context).doesNotHaveBean(HttpIdempotency.class).doesNotHaveBean(ScopeResolver.class)
                        .doesNotHaveBean("retrySafeFilterRegistration").doesNotHaveBean(RetrySafe.class)
                        .doesNotHaveBean(IdempotencyStore.class);
            });
        }

        @Test
        void servletApplicationGetsNoneOfTheReactiveBeans() {
            new WebApplicationContextRunner().withConfiguration(AutoConfigurations.of(BootLine.JACKSON))
                    .withConfiguration(RETRYSAFE).withPropertyValues("retrysafe.http.scope=global").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(HttpIdempotency.class).hasBean("retrySafeFilterRegistration");
                        assertThat(context).doesNotHaveBean(RetrySafeWebFilter.class)
                                .doesNotHaveBean(AsyncRetrySafe.class).doesNotHaveBean(AsyncIdempotencyStore.class)
                                .doesNotHaveBean(ReactiveScopeResolver.class);
                    });
        }

        @Test
        void disabledRegistersNothing() {
            runner.withBean(SimpleMeterRegistry.class).withPropertyValues("retrysafe.enabled=false").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(RetrySafeWebFilter.class).doesNotHaveBean(AsyncRetrySafe.class)
                        .doesNotHaveBean(AsyncIdempotencyStore.class).doesNotHaveBean(RetrySafe.class)
                        .doesNotHaveBean(IdempotencyStore.class).doesNotHaveBean(MicrometerRetrySafeListener.class)
                        .doesNotHaveBean(RetrySafeProperties.class);
            });
        }

        @Test
        void httpDisabledKeepsTheEngineWithoutTheFilter() {
            runner.withPropertyValues("retrysafe.http.enabled=false").run(context -> {
                assertThat(context).hasSingleBean(AsyncRetrySafe.class);
                assertThat(context).doesNotHaveBean(RetrySafeWebFilter.class)
                        .doesNotHaveBean(WebFluxIdempotency.class);
            });
        }

        @Test
        void applicationBeansWin() {
            InMemoryIdempotencyStore own = new InMemoryIdempotencyStore();
            runner.withBean(AsyncIdempotencyStore.class, own::async)
                    .withBean(ReactiveScopeResolver.class, () -> ReactiveScopeResolver.global("own"))
                    .run(context -> {
                        assertThat(context.getBean(AsyncRetrySafe.class).store()).isSameAs(own.async());
                        assertThat(context.getBean(WebFluxIdempotency.class).scope())
                                .isSameAs(context.getBean(ReactiveScopeResolver.class));
                    });
        }

        @Test
        void aFilterWiredByHandAsAPlainWebFilterIsTheOnlyOne() {
            runner.withBean("retrySafeWebFilter", WebFilter.class,
                    () -> new RetrySafeWebFilter(WebFluxIdempotency.custom().scope(ReactiveScopeResolver.global("own"))
                            .build(), AsyncRetrySafe.builder(new InMemoryIdempotencyStore().async()).build()))
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBeansOfType(WebFilter.class)).containsOnlyKeys("retrySafeWebFilter");
                    });
        }

        @Test
        void memoryTypeSharesTheBlockingStoreWithIdempotentMethods() {
            runner.withPropertyValues("retrysafe.store.type=memory").run(context -> {
                InMemoryIdempotencyStore blocking = context.getBean(InMemoryIdempotencyStore.class);
                assertThat(context.getBean(AsyncIdempotencyStore.class)).isSameAs(blocking.async());
                assertThat(context).hasSingleBean(RetrySafe.class);
            });
        }
    }

    @Nested
    class Properties {

        @Test
        void routesLimitsAndPolicyComeFromTheServletFiltersProperties() {
            runner.withPropertyValues("retrysafe.name=payments", "retrysafe.policy.retention=2h",
                    "retrysafe.policy.lease-ttl=7s", "retrysafe.policy.wait-for-result=3s",
                    "retrysafe.completion.attempts=2", "retrysafe.http.max-request-bytes=2048",
                    "retrysafe.http.max-response-bytes=4096", "retrysafe.http.replayed-headers=Location,X-Trace",
                    "retrysafe.http.routes[0].method=post", "retrysafe.http.routes[0].pattern=/payments",
                    "retrysafe.http.routes[0].json-members=/amount,/account",
                    "retrysafe.http.routes[0].retention=1h",
                    "retrysafe.http.routes[1].method=PATCH", "retrysafe.http.routes[1].pattern=/orders/{id}",
                    "retrysafe.http.routes[1].key-required=false").run(context -> {
                        AsyncRetrySafe engine = context.getBean(AsyncRetrySafe.class);
                        assertThat(engine.name()).isEqualTo("payments");
                        assertThat(engine.policy().retention()).isEqualTo(Duration.ofHours(2));
                        assertThat(engine.policy().leaseTtl()).isEqualTo(Duration.ofSeconds(7));
                        assertThat(engine.policy().waitForResult()).isEqualTo(Duration.ofSeconds(3));
                        WebFluxIdempotency http = context.getBean(WebFluxIdempotency.class);
                        assertThat(http.routes()).extracting(HttpRoute::toString)
                                .containsExactly("POST /payments", "PATCH /orders/{id}");
                        HttpRoute payments = http.routes().get(0);
                        assertThat(payments.keyRequired()).isTrue();
                        assertThat(payments.jsonMembers()).containsExactly("/amount", "/account");
                        assertThat(payments.policy()).get().satisfies(p -> {
                            assertThat(p.retention()).isEqualTo(Duration.ofHours(1));
                            assertThat(p.leaseTtl()).isEqualTo(Duration.ofSeconds(7));
                        });
                        assertThat(http.routes().get(1).keyRequired()).isFalse();
                        assertThat(http.routes().get(1).policy()).isEmpty();
                        assertThat(http.maxRequestBytes()).isEqualTo(2048);
                        assertThat(http.maxResponseBytes()).isEqualTo(4096);
                        assertThat(http.replayedHeaders()).containsExactlyInAnyOrder("location", "x-trace");
                    });
        }

        @Test
        void withoutRoutesPostAndPatchCarryingAKeyAreProtected() {
            runner.run(context -> {
                WebFluxIdempotency http = context.getBean(WebFluxIdempotency.class);
                assertThat(http.routes()).extracting(HttpRoute::toString).containsExactly("POST /**", "PATCH /**");
                assertThat(http.routes()).noneMatch(HttpRoute::keyRequired);
            });
        }

        @Test
        void aRequestThroughTheFilterRunsOnceReplaysIsRefusedWhenReusedAndMovesTheMeters() {
            AtomicInteger runs = new AtomicInteger();
            runner.withBean(SimpleMeterRegistry.class).withPropertyValues("retrysafe.name=pay").run(context -> {
                WebTestClient client = client(context, runs);
                String key = UUID.randomUUID().toString();
                post(client, key, "{\"amount\":1}").expectStatus().isCreated()
                        .expectHeader().doesNotExist("Idempotent-Replayed").expectBody(String.class)
                        .isEqualTo("run 1 of {\"amount\":1}");
                post(client, key, "{ \"amount\" : 1 }").expectStatus().isCreated()
                        .expectHeader().valueEquals("Idempotent-Replayed", "true")
                        .expectHeader().valueEquals("Location", "/payments/1")
                        .expectBody(String.class).isEqualTo("run 1 of {\"amount\":1}");
                post(client, key, "{\"amount\":2}").expectStatus().isEqualTo(422)
                        .expectHeader().contentType("application/problem+json");
                assertThat(runs).hasValue(1);
                MeterRegistry meters = context.getBean(MeterRegistry.class);
                for (String outcome : new String[] {"executed", "replayed", "mismatch"}) {
                    assertThat(meters.get(MicrometerRetrySafeListener.REQUESTS)
                            .tags("name", "pay", "source", "http", "outcome", outcome).counter().count())
                            .as(outcome).isEqualTo(1.0);
                }
                assertThat(meters.get(MicrometerRetrySafeListener.COMPLETIONS).tags("completion", "stored")
                        .counter().count()).isEqualTo(1.0);
            });
        }

        @Test
        void aKeyRefusedBeforeTheEngineIsCounted() {
            runner.withBean(SimpleMeterRegistry.class).withPropertyValues("retrysafe.key.min-length=16",
                    "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/payments")
                    .run(context -> {
                        WebTestClient client = client(context, new AtomicInteger());
                        post(client, "short", "{}").expectStatus().isBadRequest();
                        assertThat(context.getBean(MeterRegistry.class).get(MicrometerRetrySafeListener.REQUESTS)
                                .tags("outcome", "invalid_key").counter().count()).isEqualTo(1.0);
                    });
        }
    }

    @Nested
    class Stores {

        @Test
        void r2dbcConnectionFactoryGivesThePostgresStoreAndCreatesItsTable() throws Exception {
            String table = "rs_reactive_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            try {
                runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC, BootLine.R2DBC_TRANSACTION_MANAGER))
                        .withPropertyValues(SpringR2dbc.properties())
                        .withPropertyValues("retrysafe.store.table=" + table, "retrysafe.store.initialize-schema=true",
                                "retrysafe.store.lock-timeout=2s")
                        .run(context -> {
                            assertThat(context).hasNotFailed();
                            R2dbcIdempotencyStore store = context.getBean(R2dbcIdempotencyStore.class);
                            assertThat(store.table()).isEqualTo(table);
                            assertThat(store.lockTimeout()).isEqualTo(Duration.ofSeconds(2));
                            assertThat(context.getBean(AsyncRetrySafe.class).store()).isSameAs(store);
                            assertThat(context).doesNotHaveBean(IdempotencyStore.class);
                            assertThat(tableExists(table)).isTrue();
                            // Transactional mode by default with this store, as with the JDBC store.
                            assertThat(context.getBean(ReactiveIdempotentExecutor.class))
                                    .isInstanceOf(R2dbcTransactionalExecutor.class);
                        });
            } finally {
                SpringPostgres.drop(table);
            }
        }

        @Test
        void withoutInitializeSchemaNoTableIsCreated() throws Exception {
            String table = "rs_reactive_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC, BootLine.R2DBC_TRANSACTION_MANAGER))
                    .withPropertyValues(SpringR2dbc.properties())
                    .withPropertyValues("retrysafe.store.table=" + table).run(context -> {
                        assertThat(context).hasSingleBean(R2dbcIdempotencyStore.class);
                        assertThat(tableExists(table)).isFalse();
                    });
        }

        @Test
        void standaloneModeWithTheR2dbcStoreCommitsTheKeyFirst() {
            r2dbc().withPropertyValues("retrysafe.mode=standalone").run(context -> {
                assertThat(context).hasSingleBean(R2dbcIdempotencyStore.class);
                assertThat(context.getBean(ReactiveIdempotentExecutor.class))
                        .isNotInstanceOf(R2dbcTransactionalExecutor.class);
            });
        }

        @Test
        void transactionalModeWithoutATransactionManagerFails() {
            runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC)).withPropertyValues(SpringR2dbc.properties())
                    .run(context -> failure(context).hasMessageContaining(
                            "retrysafe.mode=transactional needs one ReactiveTransactionManager"));
        }

        @Test
        void transactionalModeWithAnotherStoreFails() {
            runner.withPropertyValues("retrysafe.mode=transactional").run(context -> failure(context)
                    .hasMessageContaining("retrysafe.mode=transactional needs the R2DBC store")
                    .hasMessageContaining("but the store is memory"));
        }

        @Test
        void transactionalModeCannotFailOpen() {
            r2dbc().withPropertyValues("retrysafe.fail-open=true").run(context -> failure(context)
                    .hasMessageContaining("transactional mode cannot fail open"));
        }

        @Test
        void r2dbcStoreRefusesTheLayoutsItDoesNotSupport() {
            runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC, BootLine.R2DBC_TRANSACTION_MANAGER))
                    .withPropertyValues(SpringR2dbc.properties())
                    .withPropertyValues("retrysafe.store.layout=partitioned").run(context -> {
                        failure(context).hasMessage("the R2DBC store supports "
                                + "PostgreSQL's standard layout with the key first only, but "
                                + "retrysafe.store.layout=partitioned and retrysafe.store.key-order=first");
                    });
        }

        @Test
        void r2dbcTypeWithoutAConnectionFactoryFails() {
            runner.withPropertyValues("retrysafe.store.type=r2dbc").run(context -> {
                failure(context)
                        .hasMessageContaining("retrysafe.store.type=r2dbc needs")
                        .hasMessageContaining("exactly one ConnectionFactory bean (spring.r2dbc.url)");
            });
        }

        @Test
        void jdbcTypeIsRefusedAsBlocking() {
            runner.withPropertyValues("retrysafe.store.type=jdbc").run(context -> {
                failure(context)
                        .hasMessageContaining("retrysafe.store.type=jdbc is a blocking store");
            });
        }

        @Test
        void dynamodbTypeIsRefusedAsBlocking() {
            runner.withPropertyValues("retrysafe.store.type=dynamodb", "retrysafe.store.dynamodb.region=eu-west-1")
                    .run(context -> {
                        failure(context).hasMessageContaining("retrysafe.store.type=dynamodb is a blocking store");
                    });
        }

        @Test
        void r2dbcTypeInAServletApplicationFails() {
            new WebApplicationContextRunner().withConfiguration(AutoConfigurations.of(BootLine.JACKSON))
                    .withConfiguration(RETRYSAFE)
                    .withPropertyValues("retrysafe.http.scope=global", "retrysafe.store.type=r2dbc").run(context -> {
                        failure(context).hasMessageContaining(
                                "retrysafe.store.type=r2dbc is the store of a reactive (WebFlux) application");
                    });
        }

        @Test
        void redisTypeIsTheRedisStoreThroughItsAsynchronousCommands() {
            String prefix = "rs-reactive-" + UUID.randomUUID() + ":";
            runner.withPropertyValues("retrysafe.store.type=redis",
                    "retrysafe.store.redis.uri=" + TestRedis.standaloneUri().toURI(),
                    "retrysafe.store.redis.key-prefix=" + prefix).run(context -> {
                        assertThat(context).hasNotFailed();
                        RedisIdempotencyStore redis = context.getBean(RedisIdempotencyStore.class);
                        assertThat(context.getBean(AsyncIdempotencyStore.class)).isSameAs(redis.async());
                        AtomicInteger runs = new AtomicInteger();
                        WebTestClient client = client(context, runs);
                        String key = UUID.randomUUID().toString();
                        post(client, key, "{}").expectStatus().isCreated();
                        post(client, key, "{}").expectStatus().isCreated()
                                .expectHeader().valueEquals("Idempotent-Replayed", "true");
                        assertThat(runs).hasValue(1);
                    });
        }
    }

    @Nested
    class Refusals {

        @Test
        void principalScopeWithoutSpringSecurityFailsNamingTheAlternatives() {
            runner.withPropertyValues("retrysafe.http.scope=principal").run(context -> {
                failure(context)
                        .hasMessageContaining("retrysafe.http.scope=principal (the default)")
                        .hasMessageContaining("define a ReactiveScopeResolver bean")
                        .hasMessageContaining("docs/reactive.md#spring-boot");
            });
        }

        @Test
        void fastFilterWrapsTheWebFluxFiltersExecutorOnRedisAsynchronousCommands() {
            String prefix = "rs-reactive-ff-" + UUID.randomUUID() + ":";
            runner.withConfiguration(AutoConfigurations.of(RetrySafeFastFilterAutoConfiguration.class))
                    .withPropertyValues("retrysafe.fast-filter.enabled=true",
                            "retrysafe.fast-filter.redis-uri=" + TestRedis.standaloneUri().toURI(),
                            "retrysafe.fast-filter.key-prefix=" + prefix,
                            "retrysafe.fast-filter.local-replays.max-size=1MB").run(context -> {
                        assertThat(context).hasNotFailed();
                        ReactiveIdempotentExecutor executor = context.getBean(ReactiveIdempotentExecutor.class);
                        assertThat(executor).isInstanceOf(ReactiveFastFilterExecutor.class);
                        assertThat(((ReactiveFastFilterExecutor) executor).localReplaysMaxBytes()).isEqualTo(1L << 20);
                        assertThat(((ReactiveFastFilterExecutor) executor).localReplaysTtl())
                                .isEqualTo(Duration.ofMinutes(1));
                        assertThat(((ReactiveFastFilterExecutor) executor).fastPath())
                                .isSameAs(context.getBean(RedisFastFilter.class).async());
                        AtomicInteger runs = new AtomicInteger();
                        WebTestClient client = client(context, runs);
                        String key = UUID.randomUUID().toString();
                        post(client, key, "{}").expectStatus().isCreated();
                        // The stored answer was published to Redis, under the fast filter's prefix.
                        RedisClient redis = RedisClient.create(TestRedis.standaloneUri());
                        try (var connection = redis.connect()) {
                            assertThat(connection.sync().keys(prefix + "*")).isNotEmpty();
                        } finally {
                            redis.shutdown();
                        }
                        post(client, key, "{}").expectStatus().isCreated()
                                .expectHeader().valueEquals("Idempotent-Replayed", "true");
                        assertThat(runs).hasValue(1);
                    });
        }
    }

    /** A reactive application with Boot's ConnectionFactory and R2dbcTransactionManager on the test PostgreSQL. */
    private ReactiveWebApplicationContextRunner r2dbc() {
        return runner.withConfiguration(AutoConfigurations.of(BootLine.R2DBC, BootLine.R2DBC_TRANSACTION_MANAGER))
                .withPropertyValues(SpringR2dbc.properties());
    }

    /** The cause that stopped the application, which must not have started. */
    private static AbstractThrowableAssert<?, ? extends Throwable> failure(ApplicationContextAssertProvider<?> context) {
        assertThat(context).hasFailed();
        return assertThat(context.getStartupFailure()).rootCause();
    }

    private static boolean tableExists(String table) throws Exception {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT to_regclass('" + table + "') IS NOT NULL")) {
            rs.next();
            return rs.getBoolean(1);
        }
    }
}
