package io.retrysafe.examples.paymentsquarkus;

import io.quarkus.runtime.Quarkus;
import io.quarkus.runtime.QuarkusApplication;
import io.quarkus.runtime.annotations.QuarkusMain;
import java.io.IOException;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * Starts the service: on the PostgreSQL of {@code QUARKUS_DATASOURCE_JDBC_URL} (or
 * {@code -Dquarkus.datasource.jdbc.url}), or without one on an embedded PostgreSQL whose data lasts as long as the
 * process. Once it answers it prints {@value #READY} and its port, the line a supervisor waits for.
 */
@QuarkusMain
public final class PaymentsQuarkusMain implements QuarkusApplication {
    static final String READY = "READY";

    public static void main(String... args) throws IOException {
        EmbeddedDatabase.startUnlessConfigured();
        Quarkus.run(PaymentsQuarkusMain.class, args);
    }

    @Override
    public int run(String... args) {
        System.out.println(READY + " " + ConfigProvider.getConfig().getValue("quarkus.http.port", Integer.class));
        Quarkus.waitForExit();
        return 0;
    }
}
