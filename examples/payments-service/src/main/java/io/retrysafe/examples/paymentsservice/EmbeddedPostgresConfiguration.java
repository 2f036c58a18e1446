package io.retrysafe.examples.paymentsservice;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
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

    /** Throws {@link RunningAsRootException} when the embedded default would be needed but cannot start. */
    static void requireCanStart(Environment environment) {
        if (!StringUtils.hasText(environment.getProperty("spring.datasource.url")) && runningAsRoot()) {
            throw new RunningAsRootException();
        }
    }

    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres(Environment environment) throws IOException {
        requireCanStart(environment);
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

    private static boolean runningAsRoot() {
        try {
            // On Linux /proc/self belongs to the process's effective user.
            return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | RuntimeException e) {
            return "root".equals(System.getProperty("user.name"));
        }
    }

    /** Matches when no {@code spring.datasource.url} is configured (absent or blank). */
    static final class NoDataSourceUrl implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !StringUtils.hasText(context.getEnvironment().getProperty("spring.datasource.url"));
        }
    }

    /** PostgreSQL refuses to run as root, so the embedded default cannot start. */
    static final class RunningAsRootException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        static final String MESSAGE = "Embedded PostgreSQL refuses to run as root: run as another user, or point "
                + "RETRYSAFE_JDBC_URL (or spring.datasource.url) at a server, e.g. "
                + "RETRYSAFE_JDBC_URL=jdbc:postgresql://127.0.0.1:5432/test";

        RunningAsRootException() {
            super(MESSAGE);
        }

        static boolean isCauseOf(Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof RunningAsRootException) {
                    return true;
                }
            }
            return false;
        }
    }
}
