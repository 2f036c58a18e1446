package io.retrysafe.examples.paymentsreactive;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.retrysafe.examples.paymentscommon.EmbeddedPostgresServer;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.StringUtils;

/**
 * The default database: when {@code spring.r2dbc.url} is not set (env {@code RETRYSAFE_R2DBC_URL}
 * sets it, see {@code application.yml}), an embedded PostgreSQL is started from a Maven artifact, so
 * that the service runs with nothing installed. Its data lives as long as the process. Spring closes
 * the pool, then the server, on shutdown.
 */
@Configuration(proxyBeanMethods = false)
@Conditional(EmbeddedPostgresConfiguration.NoR2dbcUrl.class)
class EmbeddedPostgresConfiguration {

    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres() throws IOException {
        return EmbeddedPostgresServer.start("spring.r2dbc.url (RETRYSAFE_R2DBC_URL)");
    }

    /** A pool on the embedded server, as large as the one {@code spring.r2dbc.pool} gives by default. */
    @Bean(destroyMethod = "dispose")
    ConnectionPool connectionFactory(EmbeddedPostgres postgres) {
        PostgresqlConnectionFactory connections = new PostgresqlConnectionFactory(PostgresqlConnectionConfiguration
                .builder().host("127.0.0.1").port(postgres.getPort()).database("postgres").username("postgres")
                .build());
        return new ConnectionPool(ConnectionPoolConfiguration.builder(connections).maxSize(10).build());
    }

    /** Matches when no {@code spring.r2dbc.url} is configured (absent or blank). */
    static final class NoR2dbcUrl implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !StringUtils.hasText(context.getEnvironment().getProperty("spring.r2dbc.url"));
        }
    }
}
