package io.retrysafe.jaxrs;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.examples.paymentstesting.HostileClients;
import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.testservices.Sql;
import io.retrysafe.testservices.TcpProxy;
import io.retrysafe.testservices.TestDatabases;
import jakarta.ws.rs.ext.RuntimeDelegate;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.SQLException;
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

    @Test
    void runsOnTheImplementationUnderTest() {
        assertThat(RuntimeDelegate.getInstance().getClass().getName()).startsWith(implementation());
    }

    @Test
    void aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing() throws Exception {
        HostileClients.aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing(target);
    }

    @Test
    void aKeyOverTheMaximumLengthIsRefused() throws Exception {
        HostileClients.aKeyOverTheMaximumLengthIsRefusedAndRunsNothing(target);
    }

    @Test
    void aChunkedBodyOverTheBoundIs413AndRunsNothing() throws Exception {
        HostileClients.aChunkedBodyOverTheBoundIs413AndRunsNothing(target);
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

    @Test
    void otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected() throws Exception {
        HostileClients.otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected(target);
    }

    @Test
    void aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole() throws Exception {
        HostileClients.aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole(target);
    }

    @Test
    void aResourceThatThrowsIsRolledBackAndItsKeyReleased() throws Exception {
        HostileClients.aResourceThatThrowsIsRolledBackAndItsKeyReleased(target, "/payments",
                PaymentsResource.FAILING_AMOUNT);
    }

    /** Standalone mode too: a failure releases the key, and the resource's own transaction never committed. */
    @Test
    void inStandaloneModeAResourceThatThrowsReleasesItsKey() throws Exception {
        HostileClients.aResourceThatThrowsIsRolledBackAndItsKeyReleased(new Target(standalone::port), "/payments",
                PaymentsResource.FAILING_AMOUNT);
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
        HostileClients.theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack(new Target(service::port), proxy);
    }
}
