package io.retrysafe.jaxrs;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.Sql;
import io.retrysafe.testservices.TcpProxy;
import io.retrysafe.testservices.TestDatabases;
import jakarta.ws.rs.ext.RuntimeDelegate;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The payments resource behind RetrySafe's Jakarta REST filters in a real HTTP server, over the test PostgreSQL,
 * as a client sees it: the conformance suite every stack passes, in transactional and in standalone mode, and the
 * requests a hostile or broken client sends. Each implementation's test extends it; the class path holds that
 * implementation only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class PaymentsOverJaxrs {
    /** How long a client retries after the store is reachable again, for the pool to replace what the cut broke. */
    private static final Duration STORE_BACK_BOUND = Duration.ofSeconds(30);

    private HikariDataSource data;
    private HikariDataSource cutOff;
    private TcpProxy proxy;
    private PaymentsService transactional;
    private PaymentsService standalone;
    private PaymentsService outage;
    private PaymentsService standaloneOutage;

    /** The schema of this implementation's tables. */
    abstract String schema();

    /** The package of the implementation's {@link RuntimeDelegate}: the one these tests must run on. */
    abstract String implementation();

    @BeforeAll
    void start() throws Exception {
        data = PaymentsService.database(schema());
        transactional = PaymentsService.transactional(data);
        standalone = PaymentsService.standalone(data);
        URI server = URI.create(TestDatabases.postgresJdbcUrl().substring("jdbc:".length()));
        proxy = new TcpProxy(server.getPort());
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl().replace(":" + server.getPort() + "/", ":" + proxy.port() + "/"));
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setSchema(schema());
        config.setMaximumPoolSize(4);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(500);
        config.setInitializationFailTimeout(-1);
        cutOff = new HikariDataSource(config);
        outage = PaymentsService.transactional(cutOff);
        standaloneOutage = PaymentsService.standalone(cutOff);
    }

    @AfterAll
    void stop() throws Exception {
        for (AutoCloseable c : new AutoCloseable[] {standaloneOutage, outage, standalone, transactional, cutOff, proxy, data}) {
            if (c != null) {
                c.close();
            }
        }
    }

    /** A payments service as the suite sees it: its port, its users, its payments counted in its own tables. */
    private final class Target extends PaymentsTarget {
        Target(IntSupplier port) {
            super(port);
        }

        @Override
        public String newAccount(long balance) throws SQLException {
            String id = "it-" + UUID.randomUUID().toString().substring(0, 18);
            update("INSERT INTO account (id, balance) VALUES (?, ?)", id, balance);
            return id;
        }

        @Override
        public void setBalance(String account, long balance) throws SQLException {
            update("UPDATE account SET balance = ? WHERE id = ?", balance, account);
        }

        @Override
        public long effects(String account) throws SQLException {
            try (Connection c = data.getConnection()) {
                return Sql.queryLong(c, "SELECT count(*) FROM payment WHERE account = ?", account);
            }
        }

        @Override
        public long maxRequestBytes() {
            return PaymentsService.MAX_REQUEST_BYTES;
        }

        private void update(String sql, Object... args) throws SQLException {
            try (Connection c = data.getConnection()) {
                Sql.update(c, sql, args);
            }
        }
    }

    @Nested
    class Transactional extends HttpConformance {
        @Override
        protected ConformanceTarget target() {
            return new Target(transactional::port);
        }
    }

    @Nested
    class Standalone extends HttpConformance {
        @Override
        protected ConformanceTarget target() {
            return new Target(standalone::port);
        }
    }

    private final Target target = new Target(() -> transactional.port());
    private final PaymentsClient client = new PaymentsClient(target);

    private HttpResponse<String> pay(String key, String body) throws Exception {
        return client.send(client.postPayment(target.firstUser(), key, body));
    }

    private static void assertProblem(HttpResponse<String> response, int status, String type) {
        assertThat(response.statusCode()).as("status of %s", response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/" + type + "\"", "\"status\":" + status);
    }

    private static void assertProblem(RawHttp.Response response, int status, String type) {
        assertThat(response.status()).as(response.toString()).isEqualTo(status);
        assertThat(response.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(response.text()).contains("\"type\":\"/problems/" + type + "\"");
    }

    /** A request as raw bytes, as alice: HTTP clients refuse to send some of what an attacker sends. */
    private RawHttp.Response raw(String target, String key, String contentType, String body) throws Exception {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Authorization", this.target.firstUser().authorization());
        headers.put("Content-Type", contentType);
        if (key != null) {
            headers.put("Idempotency-Key", key);
        }
        return RawHttp.exchange(transactional.port(), RawHttp.request("POST", target, headers,
                body.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void runsOnTheImplementationUnderTest() {
        assertThat(RuntimeDelegate.getInstance().getClass().getName()).startsWith(implementation());
    }

    @Test
    void aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        // "café": é goes out as the one byte 0xE9.
        RawHttp.Response response = raw("/payments", "caf\u00e9", "application/json", payment(account, 100));

        assertProblem(response, 400, "invalid-key");
        assertThat(response.text()).contains("\"rule\":\"not_printable_ascii\"");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aKeyOverTheMaximumLengthIsRefused() throws Exception {
        String account = target.newAccount(10_000);

        HttpResponse<String> refused = pay("k".repeat(256), payment(account, 100));

        assertProblem(refused, 400, "invalid-key");
        assertThat(refused.body()).contains("\"rule\":\"too_long\"");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aChunkedBodyOverTheBoundIs413AndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);
        byte[] body = (payment(account, 100) + " ".repeat(PaymentsService.MAX_REQUEST_BYTES))
                .getBytes(StandardCharsets.UTF_8);

        // No Content-Length: the filter finds the body too long only as it reads it.
        HttpResponse<String> refused = client.send(client.request(target.firstUser(), "/payments")
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))));

        assertProblem(refused, 413, "request-too-large");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void wrongCredentialsAreRefusedBeforeTheKeyIsClaimed() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> refused = client.send(client.postPayment(
                Credentials.basic(PaymentsTarget.ALICE, "not-her-password"), key, payment(account, 100)));
        HttpResponse<String> alice = pay(key, payment(account, 100));

        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(alice.statusCode()).as(alice.body()).isEqualTo(201);
        assertThat(alice.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isEqualTo(1);
    }

    /**
     * Spellings a server may dispatch to the resource of {@code /payments}: each is the same protected route, so
     * the same key replays, and no spelling runs the payment a second time or without a key.
     */
    @Test
    void otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();
        HttpResponse<String> first = pay(key, payment(account, 100));
        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);

        for (String spelling : List.of("/p%61yments", "/payments;x=1", "//payments", "/./payments", "/a/../payments",
                "/payments/")) {
            RawHttp.Response retry = raw(spelling, key, "application/json", payment(account, 100));
            RawHttp.Response keyless = raw(spelling, null, "application/json", payment(account, 100));

            // Not dispatched (404), the first answer replayed, or, where the spelling is another path to the
            // fingerprint (a trailing '/'), refused as another request under the key: never run again.
            if (retry.status() == 201) {
                assertThat(retry.header("Idempotent-Replayed")).as(spelling).isEqualTo("true");
                assertThat(retry.text()).isEqualTo(first.body());
            } else {
                assertThat(retry.status()).as(spelling + ": " + retry).isIn(404, 422);
            }
            assertThat(keyless.status()).as(spelling + ": " + keyless).isIn(400, 404);
        }
        assertThat(target.effects(account)).isEqualTo(1);
    }

    @Test
    void aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> first = transfer(key, "account=" + account + "&amount=5");
        HttpResponse<String> reordered = transfer(key, "amount=5&account=" + account);
        HttpResponse<String> other = transfer(key, "account=" + account + "&amount=6");
        HttpResponse<String> malformed = transfer(UUID.randomUUID().toString(), "account=%zz&amount=5");

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(first.body()).contains("\"amount\":5", "\"balance\":9995");
        assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reordered.body()).isEqualTo(first.body());
        assertProblem(other, 422, "key-reused");
        assertProblem(malformed, 400, "malformed-form");
        assertThat(target.effects(account)).isEqualTo(1);
    }

    private HttpResponse<String> transfer(String key, String form) throws Exception {
        return client.send(client.request(target.firstUser(), "/transfers").header("Idempotency-Key", key)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)));
    }

    @Test
    void aResourceThatThrowsIsRolledBackAndItsKeyReleased() throws Exception {
        assertAThrowingResourceReleasesItsKey(client);
    }

    /** Standalone mode too: a failure releases the key, and the resource's own transaction never committed. */
    @Test
    void inStandaloneModeAResourceThatThrowsReleasesItsKey() throws Exception {
        assertAThrowingResourceReleasesItsKey(new PaymentsClient(new Target(standalone::port)));
    }

    private void assertAThrowingResourceReleasesItsKey(PaymentsClient service) throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();
        String body = payment(account, PaymentsResource.FAILING_AMOUNT);

        HttpResponse<String> failed = service.send(service.postPayment(target.firstUser(), key, body));
        HttpResponse<String> retry = service.send(service.postPayment(target.firstUser(), key, body));

        assertThat(failed.statusCode()).isEqualTo(500);
        // Released, not in progress (409) nor stored: the retry runs the resource again, and fails again.
        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aResponseOverTheBoundIsSentWholeAndReplayedWithoutItsBody() throws Exception {
        String key = UUID.randomUUID().toString();
        int size = PaymentsService.MAX_RESPONSE_BYTES + 1000;
        HttpRequest.Builder report = client.request(target.firstUser(), "/reports?size=" + size)
                .header("Idempotency-Key", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}"));

        HttpResponse<String> first = client.send(report);
        HttpResponse<String> replay = client.send(report);

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(first.body()).hasSize(size);
        assertThat(replay.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Integer.toString(size));
        assertThat(replay.body()).isEmpty();
    }

    @Test
    void theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack() throws Exception {
        assertTheStoreOutOfReachIs503(outage);
    }

    @Test
    void inStandaloneModeTheStoreOutOfReachIs503Too() throws Exception {
        assertTheStoreOutOfReachIs503(standaloneOutage);
    }

    private void assertTheStoreOutOfReachIs503(PaymentsService service) throws Exception {
        PaymentsClient outageClient = new PaymentsClient(new Target(service::port));
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        proxy.cut();
        HttpResponse<String> down;
        try {
            down = outageClient.send(outageClient.postPayment(target.firstUser(), key, payment(account, 100)));
        } finally {
            proxy.restore();
        }
        // As a client would: the same request again after each 503's Retry-After, until the store answers
        // (the pool may first hand out a connection the cut broke).
        HttpResponse<String> back;
        long giveUp = System.nanoTime() + STORE_BACK_BOUND.toNanos();
        do {
            back = outageClient.send(outageClient.postPayment(target.firstUser(), key, payment(account, 100)));
            if (back.statusCode() == 503 && System.nanoTime() < giveUp) {
                Thread.sleep(1000L * Long.parseLong(back.headers().firstValue("Retry-After").orElse("1")));
            }
        } while (back.statusCode() == 503 && System.nanoTime() < giveUp);

        assertProblem(down, 503, "store-unavailable");
        assertThat(down.headers().firstValue("Retry-After")).isPresent();
        assertThat(back.statusCode()).as(back.body()).isEqualTo(201);
        assertThat(back.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isEqualTo(1);
    }
}
