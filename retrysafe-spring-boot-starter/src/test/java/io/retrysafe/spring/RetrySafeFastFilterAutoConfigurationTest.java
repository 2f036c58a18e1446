package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.servlet.FastFilterExecutor;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * {@code retrysafe.fast-filter.*}, {@code retrysafe.store.type=redis} and the health contributor:
 * which beans, which settings reach them, which mistakes stop the start with what to do. Redis is
 * connected lazily, so none is needed here (a closed loopback port stands in for one that is down);
 * the behaviour against a real Redis is in {@link RetrySafeFastFilterAutoConfigurationIT}.
 */
class RetrySafeFastFilterAutoConfigurationTest {

    static final AutoConfigurations RETRYSAFE = AutoConfigurations.of(
            RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
            RetrySafeWebAutoConfiguration.class, RetrySafePurgeAutoConfiguration.class,
            RetrySafeIdempotentAutoConfiguration.class, RetrySafeFastFilterAutoConfiguration.class,
            RetrySafeFastFilterHealthAutoConfiguration.class, RetrySafeStoreHealthAutoConfiguration.class);

    static final String SOME_REDIS = "retrysafe.fast-filter.redis-uri=redis://127.0.0.1:6379";

    final WebApplicationContextRunner webRunner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON)).withConfiguration(RETRYSAFE)
            .withPropertyValues("retrysafe.http.scope=global");

    static WebApplicationContextRunner withPostgres(WebApplicationContextRunner runner) {
        return runner.withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE,
                BootLine.DATA_SOURCE_TRANSACTION_MANAGER))
                .withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                        "spring.datasource.username=" + TestDatabases.postgresUser(),
                        "spring.datasource.password=" + TestDatabases.postgresPassword());
    }

    static String closedPortUri() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return "redis://127.0.0.1:" + socket.getLocalPort();
        }
    }

    @Nested
    class FastFilter {

        @Test
        void offByDefault() {
            withPostgres(webRunner).run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(RedisFastFilter.class);
                assertThat(context).doesNotHaveBean(FastPath.class);
                assertThat(context).getBean(IdempotentExecutor.class).isInstanceOfSatisfying(RouteModeExecutor.class,
                        executor -> assertThat(executor.transactional()).isInstanceOf(SpringTransactionalExecutor.class));
                assertThat(context).doesNotHaveBean("retrysafeHealthIndicator");
            });
        }

        @Test
        void enabledWrapsTheTransactionalExecutorWithTheLibrarysDefaults() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS).run(context -> {
                assertThat(context).hasNotFailed();
                RedisFastFilter filter = context.getBean(RedisFastFilter.class);
                assertThat(context).getBean(IdempotentExecutor.class).isInstanceOfSatisfying(FastFilterExecutor.class,
                        executor -> {
                            assertThat(executor.delegate()).isInstanceOfSatisfying(RouteModeExecutor.class, routes ->
                                    assertThat(routes.transactional()).isInstanceOf(SpringTransactionalExecutor.class));
                            assertThat(executor.fastPath()).isSameAs(filter);
                            assertThat(executor.replayTtl()).isEqualTo(FastFilterExecutor.DEFAULT_REPLAY_TTL);
                            assertThat(executor.localReplaysMaxBytes()).as("off by default").isZero();
                        });
                assertThat(filter.keyPrefix()).isEqualTo(RedisFastFilter.DEFAULT_KEY_PREFIX);
                assertThat(filter.timeout()).isEqualTo(RedisFastFilter.DEFAULT_TIMEOUT);
                assertThat(filter.markerTtl()).isEqualTo(RedisFastFilter.DEFAULT_MARKER_TTL);
                assertThat(filter.failureThreshold()).isEqualTo(RedisFastFilter.DEFAULT_FAILURE_THRESHOLD);
                assertThat(filter.openBackoff()).isEqualTo(RedisFastFilter.DEFAULT_OPEN_BACKOFF);
                assertThat(filter.maxOpenBackoff()).isEqualTo(RedisFastFilter.DEFAULT_MAX_OPEN_BACKOFF);
                assertThat(context.getBean("retrySafeFastFilterRedisClient", RetrySafeRedisClient.class).owned())
                        .as("made from the URI, so shut down with the context").isTrue();
                assertThat(context).hasSingleBean(JdbcIdempotencyStore.class);
                assertThat(context).hasSingleBean(TransactionalRetrySafe.class);
            });
        }

        @Test
        void everySettingReachesTheFilter() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS,
                    "retrysafe.fast-filter.key-prefix=payments:ff:", "retrysafe.fast-filter.timeout=50ms",
                    "retrysafe.fast-filter.marker-ttl=10s", "retrysafe.fast-filter.replay-ttl=5m",
                    "retrysafe.fast-filter.failure-threshold=3", "retrysafe.fast-filter.open-backoff=2s",
                    "retrysafe.fast-filter.max-open-backoff=1m", "retrysafe.fast-filter.local-replays.max-size=16MB",
                    "retrysafe.fast-filter.local-replays.ttl=30s").run(context -> {
                        assertThat(context).hasNotFailed();
                        RedisFastFilter filter = context.getBean(RedisFastFilter.class);
                        assertThat(filter.keyPrefix()).isEqualTo("payments:ff:");
                        assertThat(filter.timeout()).isEqualTo(Duration.ofMillis(50));
                        assertThat(filter.markerTtl()).isEqualTo(Duration.ofSeconds(10));
                        assertThat(filter.failureThreshold()).isEqualTo(3);
                        assertThat(filter.openBackoff()).isEqualTo(Duration.ofSeconds(2));
                        assertThat(filter.maxOpenBackoff()).isEqualTo(Duration.ofMinutes(1));
                        FastFilterExecutor executor = (FastFilterExecutor) context.getBean(IdempotentExecutor.class);
                        assertThat(executor.replayTtl()).isEqualTo(Duration.ofMinutes(5));
                        assertThat(executor.localReplaysMaxBytes()).isEqualTo(16L << 20);
                        assertThat(executor.localReplaysTtl()).isEqualTo(Duration.ofSeconds(30));
                    });
        }

        @Test
        void theMarkerLivesAsLongAsTheLeaseUnlessSet() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS,
                    "retrysafe.policy.lease-ttl=45s").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(RedisFastFilter.class).markerTtl()).isEqualTo(Duration.ofSeconds(45));
                    });
        }

        @Test
        void theApplicationsRedisClientIsUsedAndLeftOpen() {
            RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
            try {
                // As an application's @Bean with destroyMethod = "": the test, not the context, owns it.
                withPostgres(webRunner).withBean(RedisClient.class, () -> client,
                        definition -> ((AbstractBeanDefinition) definition).setDestroyMethodName(""))
                        .withPropertyValues("retrysafe.fast-filter.enabled=true").run(context -> {
                            assertThat(context).hasNotFailed();
                            assertThat(context).hasSingleBean(RedisFastFilter.class);
                            assertThat(context.getBean("retrySafeFastFilterRedisClient", RetrySafeRedisClient.class)
                                    .owned()).isFalse();
                        });
                assertThat(client.getResources().eventExecutorGroup().isShuttingDown())
                        .as("the application's client outlives the context").isFalse();
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }

        @Test
        void withoutUriOrClientTheStartFailsSayingWhatToSet() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("retrysafe.fast-filter.enabled=true needs Redis")
                        .hasMessageContaining("retrysafe.fast-filter.redis-uri")
                        .hasMessageContaining("RedisClient");
            });
        }

        @Test
        void aMalformedUriFailsTheStart() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true",
                    "retrysafe.fast-filter.redis-uri=localhost:6379").run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure())
                                .hasStackTraceContaining("retrysafe.fast-filter.redis-uri must be a Redis URI")
                                .hasStackTraceContaining("but was \"localhost:6379\"");
                    });
        }

        @Test
        void aSettingOutOfRangeFailsTheStart() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS,
                    "retrysafe.fast-filter.open-backoff=1m", "retrysafe.fast-filter.max-open-backoff=30s")
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessage("openBackoff must not exceed maxOpenBackoff, but was PT1M > PT30S");
                    });
        }

        @Test
        void enabledWithoutTheRedisModuleFailsTheStart() {
            withPostgres(webRunner).withClassLoader(new FilteredClassLoader(RedisFastFilter.class))
                    .withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS).run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("needs io.retrysafe:retrysafe-store-redis");
                    });
        }

        @Test
        void theApplicationsOwnFastPathIsUsed() {
            FastPath own = new FastPath() {
                @Override
                public Optional<Cached> lookup(IdempotencyKey key, Fingerprint fingerprint) {
                    return Optional.empty();
                }

                @Override
                public boolean markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
                    return true;
                }

                @Override
                public void publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response,
                        Duration ttl) {
                }

                @Override
                public void clear(IdempotencyKey key) {
                }
            };
            withPostgres(webRunner).withBean(FastPath.class, () -> own)
                    .withPropertyValues("retrysafe.fast-filter.enabled=true").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean(RedisFastFilter.class);
                        assertThat(((FastFilterExecutor) context.getBean(IdempotentExecutor.class)).fastPath())
                                .isSameAs(own);
                    });
        }

        @Test
        void anApplicationsOwnExecutorIsWrappedToo() {
            IdempotentExecutor own = (request, key, fingerprint, policy, handler) -> {
                throw new UnsupportedOperationException("not called here");
            };
            withPostgres(webRunner).withBean(IdempotentExecutor.class, () -> own)
                    .withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS).run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(((FastFilterExecutor) context.getBean(IdempotentExecutor.class)).delegate())
                                .isSameAs(own);
                    });
        }

        @Test
        void disabledStarterConfiguresNoFastFilter() {
            withPostgres(webRunner).withPropertyValues("retrysafe.enabled=false", "retrysafe.fast-filter.enabled=true",
                    SOME_REDIS).run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean(RedisFastFilter.class);
                        assertThat(context).doesNotHaveBean(IdempotentExecutor.class);
                    });
        }
    }

    @Nested
    class HealthContributor {

        @Test
        void withRedisDownItStaysUpAndSaysItIsDegraded() throws IOException {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true",
                    "retrysafe.fast-filter.redis-uri=" + closedPortUri(), "retrysafe.fast-filter.timeout=5s")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        BootLine.HealthReading health = BootLine.health(context, "retrysafeHealthIndicator");
                        assertThat(health.status()).as("requests are still answered, through the store")
                                .isEqualTo("UP");
                        assertThat(health.details()).containsEntry("fastFilter", "redis-fast-filter")
                                .containsEntry("breaker", "CLOSED").containsEntry("degraded", true);
                        assertThat((String) health.details().get("redis")).startsWith("no answer: ");
                    });
        }

        @Test
        void notThereWithoutSpringBootHealth() {
            withPostgres(webRunner).withClassLoader(new FilteredClassLoader(BootLine.HEALTH_INDICATOR))
                    .withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS).run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(RedisFastFilter.class);
                        assertThat(context).doesNotHaveBean("retrysafeHealthIndicator");
                    });
        }

        @Test
        void offWithManagementHealthRetrysafeEnabledFalse() {
            withPostgres(webRunner).withPropertyValues("retrysafe.fast-filter.enabled=true", SOME_REDIS,
                    "management.health.retrysafe.enabled=false").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean("retrysafeHealthIndicator");
                    });
        }
    }

    @Nested
    class RedisStore {

        @Test
        void redisStoreTypeRunsStandaloneOnTheRedisStore() {
            withPostgres(webRunner).withPropertyValues("retrysafe.store.type=redis",
                    "retrysafe.store.redis.uri=redis://127.0.0.1:6379", "retrysafe.store.redis.key-prefix=payments:",
                    "retrysafe.store.redis.command-timeout=750ms").run(context -> {
                        assertThat(context).hasNotFailed();
                        RedisIdempotencyStore store = context.getBean(RedisIdempotencyStore.class);
                        assertThat(store.keyPrefix()).isEqualTo("payments:");
                        assertThat(store.commandTimeout()).isEqualTo(Duration.ofMillis(750));
                        assertThat(context.getBean(RetrySafe.class).store()).isSameAs(store);
                        assertThat(context).doesNotHaveBean(JdbcIdempotencyStore.class);
                        assertThat(context).doesNotHaveBean(InMemoryIdempotencyStore.class);
                        assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
                        assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
                        assertThat(context).getBean(IdempotentExecutor.class)
                                .isNotInstanceOf(SpringTransactionalExecutor.class);
                    });
        }

        @Test
        void redisStoreDefaults() {
            webRunner.withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri=redis://127.0.0.1:6379")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        RedisIdempotencyStore store = context.getBean(RedisIdempotencyStore.class);
                        assertThat(store.keyPrefix()).isEqualTo(RedisIdempotencyStore.DEFAULT_KEY_PREFIX);
                        assertThat(store.commandTimeout()).isEqualTo(RedisIdempotencyStore.DEFAULT_COMMAND_TIMEOUT);
                    });
        }

        @Test
        void redisStoreWithTransactionalModeIsRefusedWithTheWayOut() {
            withPostgres(webRunner).withPropertyValues("retrysafe.store.type=redis",
                    "retrysafe.store.redis.uri=redis://127.0.0.1:6379", "retrysafe.mode=transactional").run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("retrysafe.mode=transactional needs the JDBC store")
                                .hasMessageContaining("the store is redis (RedisIdempotencyStore)")
                                .hasMessageContaining("set retrysafe.mode=standalone");
                    });
        }

        @Test
        void theInMemoryStoreWithTransactionalModeIsRefusedToo() {
            webRunner.withPropertyValues("retrysafe.mode=transactional").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("retrysafe.mode=transactional needs the JDBC store");
            });
        }

        @Test
        void redisStoreWithoutUriOrClientFailsSayingWhatToSet() {
            webRunner.withPropertyValues("retrysafe.store.type=redis").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("retrysafe.store.type=redis needs Redis")
                        .hasMessageContaining("retrysafe.store.redis.uri");
            });
        }

        @Test
        void redisStoreWithoutTheRedisModuleFailsSayingWhichModule() {
            webRunner.withClassLoader(new FilteredClassLoader(RedisIdempotencyStore.class))
                    .withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri=redis://127.0.0.1:6379")
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("retrysafe.store.type=redis needs io.retrysafe:retrysafe-store-redis");
                    });
        }

        @Test
        void anApplicationsOwnStoreStillWins() {
            webRunner.withBean(IdempotencyStore.class, InMemoryIdempotencyStore::new)
                    .withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri=redis://127.0.0.1:6379")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean(RedisIdempotencyStore.class);
                    });
        }
    }
}
