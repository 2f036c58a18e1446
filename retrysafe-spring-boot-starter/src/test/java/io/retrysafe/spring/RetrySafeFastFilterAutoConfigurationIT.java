package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.spi.FastPath.Cached;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * The starter's fast filter and Redis store against the shared local Redis (under key prefixes of
 * their own) and PostgreSQL: the executor it wires publishes after the commit and replays from
 * Redis; the health contributor pings; the Redis store replays.
 */
class RetrySafeFastFilterAutoConfigurationIT {
    private static final String PREFIX = "retrysafe-it:" + UUID.randomUUID() + ":";
    private static final String TABLE = "rs_fast_filter_starter_it";
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(UTF_8));

    private static String redisUri;
    private static RedisClient admin;
    private static StatefulRedisConnection<String, String> adminConnection;

    private final WebApplicationContextRunner webRunner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON))
            .withConfiguration(RetrySafeFastFilterAutoConfigurationTest.RETRYSAFE)
            .withPropertyValues("retrysafe.http.scope=global");

    @BeforeAll
    static void redis() {
        redisUri = TestRedis.standaloneUri().toURI().toString();
        admin = RedisClient.create(TestRedis.standaloneUri());
        adminConnection = admin.connect();
    }

    @AfterAll
    static void cleanUp() throws Exception {
        if (admin == null) {
            return;
        }
        try {
            for (String key : adminConnection.sync().keys(PREFIX + "*")) {
                adminConnection.sync().unlink(key);
            }
            adminConnection.close();
        } finally {
            admin.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + TABLE);
            }
        }
    }

    @Test
    void theWiredExecutorPublishesAfterTheCommitAndReplaysFromRedis() {
        RetrySafeFastFilterAutoConfigurationTest.withPostgres(webRunner).withPropertyValues(
                "retrysafe.store.table=" + TABLE, "retrysafe.store.initialize-schema=true",
                "retrysafe.fast-filter.enabled=true", "retrysafe.fast-filter.redis-uri=" + redisUri,
                "retrysafe.fast-filter.key-prefix=" + PREFIX + "ff:", "retrysafe.fast-filter.timeout=5s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
                    RedisFastFilter filter = context.getBean(RedisFastFilter.class);
                    IdempotencyKey key = IdempotencyKey.of("global|POST /payments", UUID.randomUUID().toString());
                    StoredResponse created = StoredResponse.of(201, "{\"id\":1}".getBytes(UTF_8));
                    AtomicInteger runs = new AtomicInteger();

                    Outcome<StoredResponse> first = executor.execute(new MockHttpServletRequest(), key, FINGERPRINT,
                            null, attempt -> {
                                runs.incrementAndGet();
                                return created;
                            });
                    assertThat(first).isInstanceOf(Outcome.Executed.class);
                    assertThat(filter.lookup(key, FINGERPRINT)).contains(new Cached.Replay(created));

                    Outcome<StoredResponse> retry = executor.execute(new MockHttpServletRequest(), key, FINGERPRINT,
                            null, attempt -> {
                                runs.incrementAndGet();
                                return created;
                            });
                    assertThat(retry).isEqualTo(new Outcome.Replayed<>(created));
                    assertThat(runs).hasValue(1);
                    assertThat(filter.breakerState()).isEqualTo(RedisFastFilter.BreakerState.CLOSED);
                });
    }

    @Test
    void theHealthContributorPingsRedis() {
        RetrySafeFastFilterAutoConfigurationTest.withPostgres(webRunner).withPropertyValues(
                "retrysafe.fast-filter.enabled=true", "retrysafe.fast-filter.redis-uri=" + redisUri,
                "retrysafe.fast-filter.timeout=5s").run(context -> {
                    assertThat(context).hasNotFailed();
                    BootLine.HealthReading health = BootLine.health(context, "retrysafeHealthIndicator");
                    assertThat(health.status()).isEqualTo("UP");
                    assertThat(health.details()).containsEntry("redis", "PONG").containsEntry("breaker", "CLOSED")
                            .containsEntry("degraded", false).containsKey("pingMillis");
                });
    }

    @Test
    void theRedisStoreIsConnectedOnceTheApplicationHasStartedAndItsHealthIsUp() {
        webRunner.withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri=" + redisUri,
                "retrysafe.store.redis.key-prefix=" + PREFIX + "store:").run(context -> {
                    assertThat(context).hasNotFailed();
                    // Before any call: the first requests find the connection open and the scripts loaded.
                    assertThat(context.getBean(RedisIdempotencyStore.class).isConnected()).isTrue();
                    BootLine.HealthReading health = BootLine.health(context, "retrysafeStoreHealthIndicator");
                    assertThat(health.status()).isEqualTo("UP");
                    assertThat(health.details()).containsEntry("redis", "connected");
                });
    }

    @Test
    void withRedisUnreachableTheApplicationStartsAndTheStoresHealthIsDown() throws Exception {
        webRunner.withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri="
                + RetrySafeFastFilterAutoConfigurationTest.closedPortUri(), "retrysafe.store.redis.startup-wait=1s")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    BootLine.HealthReading health = BootLine.health(context, "retrysafeStoreHealthIndicator");
                    assertThat(health.status()).isEqualTo("DOWN");
                    assertThat(health.details()).containsEntry("redis", "not connected");
                });
    }

    @Test
    void theRedisStoreReplays() {
        webRunner.withPropertyValues("retrysafe.store.type=redis", "retrysafe.store.redis.uri=" + redisUri,
                "retrysafe.store.redis.key-prefix=" + PREFIX + "store:").run(context -> {
                    assertThat(context).hasNotFailed();
                    RetrySafe retrySafe = context.getBean(RetrySafe.class);
                    IdempotencyKey key = IdempotencyKey.of("global|POST /payments", UUID.randomUUID().toString());

                    Outcome<String> first = retrySafe.execute(key, FINGERPRINT, ResponseCodec.utf8(), attempt -> "first");
                    Outcome<String> retry = retrySafe.execute(key, FINGERPRINT, ResponseCodec.utf8(), attempt -> "second");

                    assertThat(first).isInstanceOf(Outcome.Executed.class);
                    assertThat(retry).isEqualTo(new Outcome.Replayed<>("first"));
                    assertThat(adminConnection.sync().keys(PREFIX + "store:*")).hasSize(1);
                });
    }
}
