package io.retrysafe.examples.paymentscommon;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The payments services' default database: a PostgreSQL started from a Maven artifact when no database
 * URL is configured, so that a service runs with nothing installed, as any user, root included. Its data
 * lives as long as the process. The caller closes it, after its connections.
 */
public final class EmbeddedPostgresServer {
    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgresServer.class);

    private EmbeddedPostgresServer() {
    }

    /**
     * Starts the server on 127.0.0.1; its database {@code postgres} belongs to user {@code postgres}, no password.
     *
     * @param unset the setting whose absence chose it, for the log, e.g. {@code spring.datasource.url (RETRYSAFE_JDBC_URL)}
     */
    public static EmbeddedPostgres start(String unset) throws IOException {
        EmbeddedPostgres postgres = EmbeddedPostgres.builder()
                .setServerConfig("listen_addresses", "127.0.0.1")
                // A cold start on a small, busy machine can exceed the 10 s default.
                .setPGStartupWait(Duration.ofSeconds(60))
                // The application closes it, after its connections.
                .setRegisterShutdownHook(false)
                .start();
        LOG.info("No {}: started an embedded PostgreSQL on port {}; its data lasts as long as this process", unset,
                postgres.getPort());
        return postgres;
    }
}
