package io.retrysafe.examples.paymentsquarkus;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.time.Duration;

/** The default database: an embedded PostgreSQL, started when no datasource URL is configured. */
final class EmbeddedDatabase {
    static final String URL_PROPERTY = "quarkus.datasource.jdbc.url";

    private EmbeddedDatabase() {
    }

    /**
     * Starts it, and points the datasource at it, unless a URL is configured. It stops with the JVM (a hook of its
     * own), also when Quarkus fails to start and exits.
     */
    static void startUnlessConfigured() throws IOException {
        if (System.getProperty(URL_PROPERTY) != null || System.getenv("QUARKUS_DATASOURCE_JDBC_URL") != null) {
            return;
        }
        EmbeddedPostgres postgres = EmbeddedPostgres.builder()
                .setServerConfig("listen_addresses", "127.0.0.1")
                // A cold start on a small, busy machine can exceed the 10 s default.
                .setPGStartupWait(Duration.ofSeconds(60))
                .start();
        System.setProperty(URL_PROPERTY, postgres.getJdbcUrl("postgres", "postgres"));
        System.setProperty("quarkus.datasource.username", "postgres");
        System.err.println("No " + URL_PROPERTY + " (QUARKUS_DATASOURCE_JDBC_URL): started an embedded PostgreSQL on "
                + "port " + postgres.getPort() + "; its data lasts as long as this process");
    }
}
