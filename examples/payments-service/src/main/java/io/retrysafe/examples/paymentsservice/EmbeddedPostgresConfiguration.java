package io.retrysafe.examples.paymentsservice;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
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
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgresConfiguration.class);

    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres() throws IOException {
        EmbeddedPostgres postgres = EmbeddedPostgres.builder()
                .setServerConfig("listen_addresses", "127.0.0.1")
                // A cold start on a small, busy machine can exceed the 10 s default.
                .setPGStartupWait(Duration.ofSeconds(60))
                // Spring closes it, after the pool.
                .setRegisterShutdownHook(false)
                .start();
        LOG.info("No spring.datasource.url (RETRYSAFE_JDBC_URL): started an embedded PostgreSQL on port {}; its data "
                + "lasts as long as this process", postgres.getPort());
        return postgres;
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
