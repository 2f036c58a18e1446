package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static io.retrysafe.servlet.HttpAnswers.assertProblem;
import static io.retrysafe.servlet.HttpAnswers.assertReplayOf;
import static io.retrysafe.servlet.HttpAnswers.post;
import static io.retrysafe.servlet.HttpAnswers.send;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.retrysafe.AesGcmProtection;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.internal.Hex;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Stored responses encrypted at rest, as a client and an operator see them: a real Tomcat, the
 * transactional PostgreSQL store, and a private Redis as the fast filter in front of it (in one test,
 * Redis as the store itself, in standalone mode). What is
 * written to PostgreSQL and Redis is read back raw and searched for the secret the handler answered.
 */
class StoredResponseProtectionIT {
    private static final String RECORDS = "rs_at_rest_it";
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;
    private static final byte[] OCTOBER = bytes(32, 7);
    private static final byte[] NOVEMBER = bytes(16, 9);


    @TempDir
    Path dir;

    private TestRedis.Server redis;
    private RedisClient client;
    private StatefulRedisConnection<byte[], byte[]> admin;
    private final List<AutoCloseable> running = new ArrayList<>();
    private EmbeddedTomcat tomcat;
    private String key;
    private String user;

    private static javax.sql.DataSource postgres;

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed * 17 + i * 3);
        }
        return b;
    }

    @BeforeAll
    static void database() {
        postgres = TestDatabases.postgres();
        JdbcIdempotencyStore.builder(postgres).table(RECORDS).build().createSchema();
    }

    @BeforeEach
    void redis() {
        key = UUID.randomUUID().toString();
        user = "alice-" + UUID.randomUUID();
        redis = TestRedis.startServer(dir);
        client = RedisClient.create(redis.uri());
        admin = client.connect(ByteArrayCodec.INSTANCE);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            stopApplication();
        } finally {
            admin.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            redis.close();
        }
    }

    /** The application with {@code protection} on its engine's policy: filter, PostgreSQL, Redis in front. */
    private void startApplication(StoredResponseProtection protection) throws Exception {
        stopApplication();
        JdbcIdempotencyStore jdbc = JdbcIdempotencyStore.builder(postgres).table(RECORDS).build();
        TransactionalRetrySafe transactional = TransactionalRetrySafe.of(RetrySafe.builder(jdbc).name("at-rest-it")
                .policy(OperationPolicy.custom().protection(protection).build()).build());
        RedisFastFilter fastFilter = RedisFastFilter.builder(client).timeout(Duration.ofSeconds(1)).build();
        running.add(fastFilter);
        IdempotentExecutor executor = FastFilterExecutor.builder(
                new JdbcTransactionalExecutor(transactional, postgres), fastFilter, transactional.engine()).build();
        HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/cards").build())
                .scope(ScopeResolver.header("X-User")).build();
        tomcat = EmbeddedTomcat.start(dir.resolve("tomcat-" + running.size()), context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, executor, transactional.engine().listener()), "/*");
            EmbeddedTomcat.servlet(context, "cards", new CardServlet(), "/*");
        });
    }

    /** Standalone mode with Redis as the store (no PostgreSQL, no fast filter). */
    private void startOnTheRedisStore(StoredResponseProtection protection) throws Exception {
        stopApplication();
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).build();
        running.add(store);
        RetrySafe engine = RetrySafe.builder(store).name("at-rest-redis-it")
                .policy(OperationPolicy.custom().protection(protection).build()).build();
        HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/cards").build())
                .scope(ScopeResolver.header("X-User")).build();
        tomcat = EmbeddedTomcat.start(dir.resolve("tomcat-" + running.size()), context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.servlet(context, "cards", new CardServlet(), "/*");
        });
    }

    private void stopApplication() throws Exception {
        if (tomcat != null) {
            tomcat.close();
            tomcat = null;
        }
        for (AutoCloseable c : running) {
            c.close();
        }
    }

    private static AesGcmProtection aes(String current, Object... idsAndKeys) {
        AesGcmProtection.Builder b = AesGcmProtection.builder();
        for (int i = 0; i < idsAndKeys.length; i += 2) {
            b.key((String) idsAndKeys[i], (byte[]) idsAndKeys[i + 1]);
        }
        return b.currentKey(current).build();
    }

    @Test
    void postgresAndRedisHoldOnlyCiphertextAndTheRetryReplaysThePlaintext() throws Exception {
        startApplication(aes("2026-11", "2026-11", NOVEMBER));

        HttpResponse<byte[]> first = send(issue(key));
        assertThat(first.statusCode()).isEqualTo(201);
        String secret = CardServlet.secret(first);

        HttpResponse<byte[]> fromRedis = send(issue(key));
        assertReplayOf(fromRedis, first);
        assertThat(redisKeys()).as("the fast filter cached the response").isNotEmpty();
        assertThat(CardServlet.runs(key)).isEqualTo(1);

        String row = postgresRow();
        assertThat(row).as("the PostgreSQL row").contains(key)
                .doesNotContain(secret, hex(secret), "application/json", "/cards/");
        byte[] redisDump = redisDump();
        String dump = new String(redisDump, UTF_8);
        assertThat(dump).as("every Redis key and value")
                .doesNotContain(secret, key, user, "application/json", "/cards/");
        assertThat(Hex.encode(redisDump)).doesNotContain(hex(secret));
    }

    @Test
    void theRedisStoreHoldsOnlyCiphertextAndHashesAndTheRetryReplaysThePlaintext() throws Exception {
        startOnTheRedisStore(aes("k", "k", NOVEMBER));

        HttpResponse<byte[]> first = send(issue(key));
        String secret = CardServlet.secret(first);
        assertReplayOf(send(issue(key)), first);

        byte[] redisDump = redisDump();
        assertThat(new String(redisDump, UTF_8)).as("every Redis key and value").contains("COMPLETED")
                .doesNotContain(secret, key, user, "application/json", "/cards/");
        assertThat(Hex.encode(redisDump)).doesNotContain(hex(secret));
        assertThat(CardServlet.runs(key)).isEqualTo(1);
    }

    @Test
    void withoutProtectionTheSecretIsStoredInTheClear() throws Exception {
        // The other tests' assertions could not fail if the secret never reached the stores at all.
        startApplication(StoredResponseProtection.NONE);

        String secret = CardServlet.secret(send(issue(key)));
        assertReplayOf(send(issue(key)), send(issue(key)));

        assertThat(postgresRow()).contains(hex(secret));
        assertThat(new String(redisDump(), UTF_8)).contains(secret)
                .as("only hashes of scope and key, even unencrypted").doesNotContain(key, user);
    }

    @Test
    void afterRotationOldRecordsReplayWhileTheirKeyIsConfiguredAndAreRefusedWithoutRunningOnceItIsGone()
            throws Exception {
        startApplication(aes("2026-10", "2026-10", OCTOBER));
        HttpResponse<byte[]> underOctober = send(issue(key));
        assertThat(underOctober.statusCode()).isEqualTo(201);

        startApplication(aes("2026-11", "2026-10", OCTOBER, "2026-11", NOVEMBER));
        assertReplayOf(send(issue(key)), underOctober);
        admin.sync().flushall(); // PostgreSQL, not the cache, must open it too
        assertReplayOf(send(issue(key)), underOctober);
        String newKey = UUID.randomUUID().toString();
        HttpResponse<byte[]> underNovember = send(issue(newKey));
        assertThat(underNovember.statusCode()).isEqualTo(201);

        startApplication(aes("2026-11", "2026-11", NOVEMBER));
        assertReplayOf(send(issue(newKey)), underNovember);
        // The copy the fast filter warmed from PostgreSQL was sealed anew, under the current key.
        assertReplayOf(send(issue(key)), underOctober);
        admin.sync().flushall();
        HttpResponse<byte[]> gone = send(issue(key));

        assertProblem(gone, 500, "/problems/stored-response-unreadable");
        assertThat(new String(gone.body(), UTF_8)).doesNotContain(CardServlet.secret(underOctober));
        assertThat(CardServlet.runs(key)).as("never run again").isEqualTo(1);
        assertProblem(send(issue(key)), 500, "/problems/stored-response-unreadable");
        assertThat(CardServlet.runs(key)).isEqualTo(1);
    }

    @Test
    void aCachedCopyThatDoesNotOpenSendsTheRequestToTheStore() throws Exception {
        startApplication(aes("2026-10", "2026-10", OCTOBER));
        HttpResponse<byte[]> underOctober = send(issue(key));

        startApplication(aes("2026-10", "2026-10", NOVEMBER)); // the same id, another key: the tag fails
        HttpResponse<byte[]> refused = send(issue(key));

        assertProblem(refused, 500, "/problems/stored-response-unreadable");
        assertThat(CardServlet.runs(key)).as("neither the cache nor the store made it run again").isEqualTo(1);
        startApplication(aes("2026-10", "2026-10", OCTOBER));
        assertReplayOf(send(issue(key)), underOctober);
    }

    @Test
    void aRedactedBodyIsWhatEveryReplayReturnsTheFirstAnswerIsWhole() throws Exception {
        startApplication(StoredResponseProtection.redacting(r -> StoredResponse.of(r.status(), r.headers(),
                new String(r.body(), UTF_8).replaceAll("\"pan\":\"\\d{12}(\\d{4})\"", "\"pan\":\"************$1\"")
                        .getBytes(UTF_8))).andThen(aes("k", "k", NOVEMBER)));

        HttpResponse<byte[]> first = send(issue(key));
        String secret = CardServlet.secret(first);
        HttpResponse<byte[]> fromRedis = send(issue(key));
        admin.sync().flushall();
        HttpResponse<byte[]> fromPostgres = send(issue(key));

        assertThat(new String(first.body(), UTF_8)).contains("\"pan\":\"" + secret + "\"");
        String redacted = new String(first.body(), UTF_8).replace(secret, "************" + secret.substring(12));
        assertThat(new String(fromRedis.body(), UTF_8)).isEqualTo(redacted);
        assertThat(new String(fromPostgres.body(), UTF_8)).isEqualTo(redacted);
        assertThat(fromPostgres.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(CardServlet.runs(key)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ helpers

    private HttpRequest.Builder issue(String idempotencyKey) {
        return post(tomcat.uri("/cards"), user, idempotencyKey, "{\"holder\":\"alice\"}");
    }

    private static String hex(String s) {
        return Hex.encode(s.getBytes(UTF_8));
    }

    /** The whole row of this test's key as PostgreSQL renders it (bytea as hex). */
    private String postgresRow() throws SQLException {
        try (Connection c = postgres.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT r::text FROM " + RECORDS + " r WHERE idem_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("a row for the key").isTrue();
                return rs.getString(1);
            }
        }
    }

    private List<byte[]> redisKeys() {
        List<byte[]> keys = new ArrayList<>();
        KeyScanCursor<byte[]> cursor = admin.sync().scan(ScanArgs.Builder.limit(100));
        keys.addAll(cursor.getKeys());
        while (!cursor.isFinished()) {
            cursor = admin.sync().scan(ScanCursor.of(cursor.getCursor()), ScanArgs.Builder.limit(100));
            keys.addAll(cursor.getKeys());
        }
        return keys;
    }

    /** Every key of the private Redis and its value, whatever its type, concatenated. */
    private byte[] redisDump() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] k : redisKeys()) {
            out.write(k);
            out.write('\n');
            String type = admin.sync().type(k);
            if (type.equals("string")) {
                out.write(admin.sync().get(k));
            } else if (type.equals("hash")) {
                for (Map.Entry<byte[], byte[]> e : admin.sync().hgetall(k).entrySet()) {
                    out.write(e.getKey());
                    out.write(e.getValue());
                }
            } else {
                throw new AssertionError("unexpected Redis type " + type);
            }
            out.write('\n');
        }
        return out.toByteArray();
    }

    /** Issues a card: answers 201 with a fresh 16-digit number no second run could repeat. */
    static final class CardServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private static final Pattern PAN = Pattern.compile("\"pan\":\"(\\d{16})\"");
        static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

        static int runs(String idempotencyKey) {
            AtomicInteger n = RUNS.get(idempotencyKey);
            return n == null ? 0 : n.get();
        }

        static String secret(HttpResponse<byte[]> response) {
            Matcher m = PAN.matcher(new String(response.body(), UTF_8));
            assertThat(m.find()).as("a card number in %s", new String(response.body(), UTF_8)).isTrue();
            return m.group(1);
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            RUNS.computeIfAbsent(req.getHeader(HttpIdempotency.HEADER), k -> new AtomicInteger()).incrementAndGet();
            req.getInputStream().readAllBytes();
            String pan = String.format("4%015d", Math.floorMod(UUID.randomUUID().getLeastSignificantBits(),
                    1_000_000_000_000_000L));
            resp.setStatus(201);
            resp.setHeader("Location", "/cards/" + pan.substring(12));
            resp.setContentType("application/json");
            resp.getOutputStream().write(("{\"pan\":\"" + pan + "\",\"holder\":\"alice\"}").getBytes(UTF_8));
        }
    }
}
