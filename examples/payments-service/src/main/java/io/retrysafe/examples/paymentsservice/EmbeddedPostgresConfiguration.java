package io.retrysafe.examples.paymentsservice;

import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.examples.paymentscommon.EmbeddedPostgresServer;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.StringUtils;

/**
 * The default database: when {@code spring.datasource.url} is not set (env {@code RETRYSAFE_JDBC_URL}
 * sets it, see {@code application.yml}), an embedded PostgreSQL is started from a Maven artifact, so
 * that the service runs with nothing installed. Its data lives as long as the process. Spring closes
 * the pool, then the server, on shutdown.
 */
@Configuration(proxyBeanMethods = false)
@Conditional(EmbeddedPostgresConfiguration.NoDataSourceUrl.class)
class EmbeddedPostgresConfiguration {
    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres() throws IOException {
        return EmbeddedPostgresServer.start("spring.datasource.url (RETRYSAFE_JDBC_URL)");
    }

    /** The pool on the embedded server; {@code spring.datasource.hikari.*} apply as usual. */
    @Bean(destroyMethod = "close")
    @ConfigurationProperties("spring.datasource.hikari")
    HikariDataSource dataSource(EmbeddedPostgres postgres) {
        HikariDataSource dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
        dataSource.setUsername("postgres");
        dataSource.setPassword("");
        return dataSource;
    }

    /** Matches when no {@code spring.datasource.url} is configured (absent or blank). */
    static final class NoDataSourceUrl implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !StringUtils.hasText(context.getEnvironment().getProperty("spring.datasource.url"));
        }
    }
}
