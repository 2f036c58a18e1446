package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.AbstractDataSource;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * The transactional executor when the database cannot even begin a transaction, or breaks once it has:
 * fail closed, 503.
 */
class SpringTransactionalExecutorTest {

    /** A database that refuses every connection. */
    private static final DataSource DOWN = new AbstractDataSource() {
        @Override
        public Connection getConnection() throws SQLException {
            throw new SQLException("Connection refused", "08001");
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return getConnection();
        }
    };

    /**
     * A connection that was taken from the pool just before the database went away: the transaction
     * begins, then every statement and the rollback fail, as PostgreSQL's driver fails on a cut socket.
     */
    private static final DataSource BREAKS_AFTER_BEGIN = new AbstractDataSource() {
        @Override
        public Connection getConnection() {
            return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class},
                    (proxy, method, args) -> switch (method.getName()) {
                        case "getAutoCommit" -> true;
                        case "setAutoCommit", "close", "setReadOnly", "setTransactionIsolation" -> null;
                        case "isClosed", "isReadOnly" -> false;
                        case "hashCode" -> System.identityHashCode(proxy);
                        case "equals" -> proxy == args[0];
                        case "toString" -> "broken connection";
                        default -> throw new SQLException("An I/O error occurred while sending to the backend.",
                                "08006");
                    });
        }

        @Override
        public Connection getConnection(String username, String password) {
            return getConnection();
        }
    };

    @Test
    void aTransactionThatCannotBeginIsAnswered503WithoutRunningTheHandler() throws Exception {
        assertAnswered503WithoutRunningTheHandler(DOWN, "7");
    }

    @Test
    void aConnectionThatBreaksInsideTheTransactionIsAnswered503NotA500() throws Exception {
        // The claim fails (store unavailable), and so does the rollback after it: still 503, which a client retries.
        // Retry-After is the policy's (7 s), not the JDBC store's own hint for its failures (1 s).
        assertAnswered503WithoutRunningTheHandler(BREAKS_AFTER_BEGIN, "7");
    }

    private static void assertAnswered503WithoutRunningTheHandler(DataSource database, String retryAfter)
            throws Exception {
        RetrySafe engine = RetrySafe.builder(JdbcIdempotencyStore.builder(database).dialect(JdbcDialect.POSTGRESQL)
                        .build())
                .policy(OperationPolicy.custom().retryAfter(Duration.ofSeconds(7)).build()).build();
        SpringTransactionalExecutor executor = new SpringTransactionalExecutor(new JdbcTransactionManager(database),
                database, TransactionalRetrySafe.of(engine));
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
        request.addHeader(HttpIdempotency.HEADER, "key-1");
        request.setContentType("application/json");
        request.setContent("{\"name\":\"a\"}".getBytes(UTF_8));
        MockHttpServletResponse response = new MockHttpServletResponse();

        filter.doFilter(request, response, new MockFilterChain(handler));

        assertThat(runs).hasValue(0);
        assertThat(response.getStatus()).isEqualTo(503);
        assertThat(response.getContentType()).isEqualTo("application/problem+json");
        assertThat(response.getHeader("Retry-After")).isEqualTo(retryAfter);
        assertThat(response.getContentAsString()).contains("\"type\":\"/problems/store-unavailable\"");
    }
}
