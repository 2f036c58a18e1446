package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.AbstractDataSource;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * The connection is lost after the transaction began and before the claim (the database restarted,
 * the network cut it): the claim fails, and so does the rollback. The client must get the claim's
 * 503 with {@code Retry-After}, a retryable answer, and never a 500 about the failed rollback.
 * Found by the fault-injection suite (docs/faults.md): PostgreSQL restarts and dropped connections
 * made the payments service answer 500 "JDBC rollback failed".
 */
class SpringTransactionalExecutorConnectionLostIT {
    private static final String RECORDS = "rs_lost_records_" + UUID.randomUUID().toString().replace("-", "")
            .substring(0, 12);

    /** Real PostgreSQL connections; with {@code cutNext}, the next one's server process is terminated as it is handed out. */
    private static final class CuttingDataSource extends AbstractDataSource {
        volatile boolean cutNext;

        @Override
        public Connection getConnection() throws SQLException {
            Connection c = DriverManager.getConnection(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                    TestDatabases.postgresPassword());
            if (cutNext) {
                cutNext = false;
                int pid;
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
                    rs.next();
                    pid = rs.getInt(1);
                }
                try (Connection admin = DriverManager.getConnection(TestDatabases.postgresJdbcUrl(),
                        TestDatabases.postgresUser(), TestDatabases.postgresPassword());
                        PreparedStatement ps = admin.prepareStatement("SELECT pg_terminate_backend(?)")) {
                    ps.setInt(1, pid);
                    ps.executeQuery().close();
                    await().atMost(Duration.ofSeconds(30)).until(() -> !alive(admin, pid));
                }
            }
            return c;
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return getConnection();
        }

        private static boolean alive(Connection admin, int pid) throws SQLException {
            try (PreparedStatement ps = admin.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE pid = ?")) {
                ps.setInt(1, pid);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1) > 0;
                }
            }
        }
    }

    @Test
    void aConnectionLostBeforeTheClaimIsAnswered503NotA500AboutTheRollback() throws Exception {
        CuttingDataSource dataSource = new CuttingDataSource();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).table(RECORDS).build();
        store.createSchema();
        try {
            RetrySafe engine = RetrySafe.builder(store).build();
            SpringTransactionalExecutor executor = new SpringTransactionalExecutor(
                    new JdbcTransactionManager(dataSource), dataSource, TransactionalRetrySafe.of(engine));
            HttpIdempotency config = HttpIdempotency.custom().route(IdempotentRoute.of("POST", "/things").build())
                    .scope(ScopeResolver.global("test")).build();
            RetrySafeFilter filter = new RetrySafeFilter(config, executor, engine.listener());
            AtomicInteger runs = new AtomicInteger();
            HttpServlet handler = new HttpServlet() {
                @Override
                protected void doPost(HttpServletRequest req, HttpServletResponse resp) {
                    runs.incrementAndGet();
                    resp.setStatus(201);
                }
            };
            MockHttpServletRequest request = new MockHttpServletRequest("POST", "/things");
            request.addHeader(HttpIdempotency.HEADER, UUID.randomUUID().toString());
            request.setContentType("application/json");
            request.setContent("{\"name\":\"a\"}".getBytes(UTF_8));
            MockHttpServletResponse response = new MockHttpServletResponse();
            dataSource.cutNext = true;

            filter.doFilter(request, response, new MockFilterChain(handler));

            assertThat(runs).hasValue(0);
            assertThat(response.getStatus()).isEqualTo(503);
            assertThat(response.getContentType()).isEqualTo("application/problem+json");
            assertThat(response.getHeader("Retry-After")).isEqualTo("1");
            assertThat(response.getContentAsString()).contains("\"type\":\"/problems/store-unavailable\"");
        } finally {
            try (Connection c = DriverManager.getConnection(TestDatabases.postgresJdbcUrl(),
                    TestDatabases.postgresUser(), TestDatabases.postgresPassword()); Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS " + RECORDS);
            }
        }
    }
}
