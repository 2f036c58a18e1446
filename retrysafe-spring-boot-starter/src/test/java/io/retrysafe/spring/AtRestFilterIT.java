package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.retrysafe.internal.Hex;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code retrysafe.at-rest.*} as an application gets it: a Spring Boot application on a real Tomcat,
 * transactional PostgreSQL and the Redis fast filter. A route and an {@link Idempotent} method are
 * encrypted, a route with {@code at-rest: false} is not; the rows and the Redis entries are read back raw.
 */
@SpringBootTest(classes = AtRestFilterIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/cards",
                "retrysafe.http.routes[1].method=POST",
                "retrysafe.http.routes[1].pattern=/notes",
                "retrysafe.http.routes[1].at-rest=false",
                "retrysafe.store.initialize-schema=true",
                "retrysafe.fast-filter.enabled=true",
                "retrysafe.fast-filter.timeout=2s",
                "retrysafe.at-rest.current-key=2026-11",
        })
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class AtRestFilterIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String RECORDS = "rs_at_rest_records_" + SUFFIX;
    private static final String PREFIX = "rs-at-rest-" + SUFFIX + ":";
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;

    private static RedisClient redis;
    private static StatefulRedisConnection<byte[], byte[]> admin;

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", TestDatabases::postgresJdbcUrl);
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.fast-filter.redis-uri", () -> TestRedis.standaloneUri().toURI().toString());
        registry.add("retrysafe.fast-filter.key-prefix", () -> PREFIX);
        registry.add("retrysafe.at-rest.keys.2026-10", () -> Base64.getEncoder().encodeToString(new byte[16]));
        byte[] current = new byte[32];
        current[0] = 42;
        registry.add("retrysafe.at-rest.keys.2026-11", () -> Base64.getEncoder().encodeToString(current));
    }

    @BeforeAll
    static void connect() {
        redis = RedisClient.create(TestRedis.standaloneUri());
        admin = redis.connect(ByteArrayCodec.INSTANCE);
    }

    @AfterAll
    static void disconnect() {
        admin.close();
        redis.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(CardsController.class)
    static class App {
        @Bean
        Vault vault() {
            return new Vault();
        }
    }

    /** An {@link Idempotent} service whose result is a secret. */
    public static class Vault {
        /** Static: the bean is a proxy, whose own fields are not the target's. */
        static final AtomicInteger RUNS = new AtomicInteger();

        @Idempotent(key = "#ref", scope = Idempotent.Scope.SHARED)
        public String open(String ref) {
            RUNS.incrementAndGet();
            return "vault-secret-" + UUID.randomUUID();
        }
    }

    @RestController
    static class CardsController {
        final AtomicInteger runs = new AtomicInteger();

        @PostMapping("/cards")
        ResponseEntity<String> issue() {
            runs.incrementAndGet();
            return ResponseEntity.status(201).header("Content-Type", "application/json")
                    .body("{\"pan\":\"card-secret-" + UUID.randomUUID() + "\"}");
        }

        @PostMapping("/notes")
        ResponseEntity<String> note() {
            return ResponseEntity.status(201).header("Content-Type", "application/json")
                    .body("{\"note\":\"note-" + UUID.randomUUID() + "\"}");
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    CardsController cards;
    @Autowired
    Vault vault;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private HttpResponse<String> post(String path, String key) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .header("X-User", "alice").header(HttpIdempotency.HEADER, key).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30)).POST(BodyPublishers.ofString("{}")).build(), BodyHandlers.ofString());
    }

    private String row(String key) {
        return jdbc.queryForObject("SELECT r::text FROM " + RECORDS + " r WHERE idem_key = ?", String.class, key);
    }

    /** Every key under this test's prefix and its value. */
    private String redisDump() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<byte[]> keys = admin.sync().scan(ScanArgs.Builder.matches(PREFIX + "*").limit(10_000)).getKeys();
        for (byte[] k : keys) {
            out.write(k);
            out.write(admin.sync().get(k));
        }
        return out.toString(UTF_8) + Hex.encode(out.toByteArray());
    }

    @Test
    void aRouteIsEncryptedInPostgresAndRedisAndItsRetryReplaysThePlaintext() throws Exception {
        String key = "card-" + UUID.randomUUID();
        HttpResponse<String> first = post("/cards", key);
        assertThat(first.statusCode()).isEqualTo(201);
        String secret = first.body().substring(first.body().indexOf("card-secret-"), first.body().length() - 2);

        HttpResponse<String> retry = post("/cards", key);

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(cards.runs).hasValue(1);
        assertThat(row(key)).contains(key).doesNotContain(secret, Hex.encode(secret.getBytes(UTF_8)), "application/json");
        String dump = redisDump();
        assertThat(dump).as("the fast filter cached the response").contains(PREFIX);
        assertThat(dump).doesNotContain(secret, Hex.encode(secret.getBytes(UTF_8)), key, "alice");
    }

    @Test
    void aRouteWithAtRestOffIsStoredInTheClear() throws Exception {
        String key = "note-" + UUID.randomUUID();
        HttpResponse<String> first = post("/notes", key);

        assertThat(post("/notes", key).body()).isEqualTo(first.body());
        assertThat(row(key)).contains(Hex.encode(first.body().getBytes(UTF_8)));
    }

    @Test
    void anIdempotentMethodIsEncrypted() {
        String ref = "vault-" + UUID.randomUUID();
        String secret = vault.open(ref);

        assertThat(vault.open(ref)).isEqualTo(secret);
        assertThat(Vault.RUNS).hasValue(1);
        assertThat(row(ref)).contains(ref).doesNotContain(secret, Hex.encode(secret.getBytes(UTF_8)));
    }
}
