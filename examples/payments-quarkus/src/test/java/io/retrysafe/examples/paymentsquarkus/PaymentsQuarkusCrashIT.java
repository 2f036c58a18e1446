package io.retrysafe.examples.paymentsquarkus;


import io.retrysafe.conformance.CrashUnderLoad;
import io.retrysafe.examples.paymentstesting.CrashChecks;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.testservices.ChildJvm;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The packaged service ({@code target/quarkus-app/quarkus-run.jar}, as an operator runs it) killed with SIGKILL
 * while clients pay through it, and started again on the same database. Clients retry every intent with its key
 * until they get a final answer, across the kill. Afterwards each intent has exactly one payment, and every answer
 * to it, a replay after the restart included, is byte for byte the first answer its client got.
 */
class PaymentsQuarkusCrashIT {
    private static final Path JAR = Path.of("target", "quarkus-app", "quarkus-run.jar");
    private static final Duration START = Duration.ofSeconds(180);
    private static final int CLIENTS = 8;
    private static final int INTENTS_PER_CLIENT = 12;

    private static ChildJvm service;
    private static volatile int port;

    private static final PaymentsTarget TARGET = new PaymentsTarget(() -> port) {
        @Override
        public long maxRequestBytes() {
            return 1024 * 1024;
        }
    };

    private static synchronized void start() throws Exception {
        int free;
        try (ServerSocket socket = new ServerSocket(0)) {
            free = socket.getLocalPort();
        }
        service = ChildJvm.startJar(JAR, List.of("-Dquarkus.http.port=" + free, "-Dquarkus.http.host=127.0.0.1",
                "-Dquarkus.datasource.jdbc.url=" + PaymentsDatabase.url(),
                "-Dquarkus.datasource.username=" + PaymentsDatabase.user(),
                "-Dquarkus.datasource.password=" + PaymentsDatabase.password(), "-Dquarkus.log.level=WARN"),
                PaymentsQuarkusMain.READY);
        port = Integer.parseInt(service.awaitLine(START).strip());
    }

    @AfterAll
    static void stop() throws IOException {
        if (service != null) {
            service.close();
        }
    }

    @Test
    void killedUnderLoadItBooksEachIntentOnceAndEveryReplayIsTheFirstAnswer() throws Exception {
        start();
        CrashUnderLoad load = CrashUnderLoad.run(TARGET, TARGET.firstUser(), CLIENTS, INTENTS_PER_CLIENT, () -> {
            service.kill();
            start();
        });

        CrashChecks.assertEachIntentBookedOnce(load, TARGET);
    }
}
