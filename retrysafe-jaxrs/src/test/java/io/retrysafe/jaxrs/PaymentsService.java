package io.retrysafe.jaxrs;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.RetrySafe;
import io.retrysafe.examples.paymentscommon.JaxrsBasicAuthentication;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestSchemas;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.SeBootstrap;
import jakarta.ws.rs.core.Application;
import jakarta.ws.rs.core.Feature;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * The payments resource in a real HTTP server of whichever Jakarta REST implementation is on the class path,
 * started through the implementation-neutral {@link SeBootstrap}, over the test PostgreSQL: RetrySafe in front,
 * transactional or standalone.
 */
final class PaymentsService implements AutoCloseable {
    static final int MAX_REQUEST_BYTES = 4096;
    static final int MAX_RESPONSE_BYTES = 2048;
    static final String RECORDS = "idempotency_records";

    private final SeBootstrap.Instance instance;

    private PaymentsService(SeBootstrap.Instance instance) {
        this.instance = instance;
    }

    /** A fresh schema with the payments tables and the store's. */
    static HikariDataSource database(String schema) throws SQLException {
        HikariDataSource dataSource = TestSchemas.postgres(schema);
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL)");
            s.execute("CREATE TABLE payment (id UUID PRIMARY KEY, account VARCHAR(64) NOT NULL, amount BIGINT NOT NULL, "
                    + "created_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        }
        JdbcIdempotencyStore.builder(dataSource).table(RECORDS).build().createSchema();
        return dataSource;
    }

    /** The protected routes: payments require a key, transfers (forms) and reports too. */
    static JaxrsIdempotency config() {
        return JaxrsIdempotency.custom()
                .route(HttpRoute.of("POST", "/payments").build())
                .route(HttpRoute.of("POST", "/transfers").build())
                .route(HttpRoute.of("POST", "/reports").build())
                .scope(JaxrsScopeResolver.principal())
                .maxRequestBytes(MAX_REQUEST_BYTES)
                .maxResponseBytes(MAX_RESPONSE_BYTES)
                .build();
    }

    /** Transactional mode: the store and the payments share {@code storeData}'s transactions. */
    static PaymentsService transactional(DataSource storeData) throws Exception {
        RetrySafe engine = RetrySafe.builder(JdbcIdempotencyStore.builder(storeData).table(RECORDS).build())
                .name("jaxrs-transactional").build();
        return start(RetrySafeFeature.transactional(config(), TransactionalRetrySafe.of(engine)),
                new PaymentsResource(storeData, true));
    }

    /** Standalone mode: the key is claimed and completed in transactions of its own. */
    static PaymentsService standalone(DataSource data) throws Exception {
        RetrySafe engine = RetrySafe.builder(JdbcIdempotencyStore.builder(data).table(RECORDS).build())
                .name("jaxrs-standalone").build();
        return start(RetrySafeFeature.standalone(config(), engine), new PaymentsResource(data, false));
    }

    private static PaymentsService start(Feature retrySafe, PaymentsResource resource) throws Exception {
        Application application = new Application() {
            @Override
            public Set<Object> getSingletons() {
                return Set.of(resource, retrySafe, new Prioritised());
            }

            /** Jersey makes a relative Location absolute unless told not to; the suite expects it as written. */
            @Override
            public Map<String, Object> getProperties() {
                return Map.of("jersey.config.server.headers.location.relative.resolution.disabled", true);
            }
        };
        SeBootstrap.Configuration configuration = SeBootstrap.Configuration.builder().host("127.0.0.1").port(0)
                .rootPath("/").build();
        return new PaymentsService(SeBootstrap.start(application, configuration).toCompletableFuture()
                .get(30, TimeUnit.SECONDS));
    }

    /** The application's own filters, around RetrySafe's: authentication before it, the test's hold after. */
    static final class Prioritised implements Feature {
        @Override
        public boolean configure(jakarta.ws.rs.core.FeatureContext context) {
            context.register(new JaxrsBasicAuthentication(), Priorities.AUTHENTICATION);
            context.register(new HoldingFilter(), RetrySafeFeature.PRIORITY + 1);
            return true;
        }
    }

    int port() {
        return instance.configuration().port();
    }

    @Override
    public void close() throws Exception {
        instance.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
