package io.retrysafe.examples.paymentsreactive;


import io.retrysafe.conformance.CrashUnderLoad;
import io.retrysafe.conformance.RestartConformance;
import io.retrysafe.conformance.RestartableTarget;
import io.retrysafe.examples.paymentstesting.CrashChecks;
import io.retrysafe.testservices.ChildJvm;
import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.TestFactory;

/**
 * The service as a child JVM, killed with SIGKILL while clients pay through it, and started again on
 * the same database. Clients retry every intent with its key until they get a final answer, across the
 * kill. Afterwards each intent has exactly one payment, and every answer to it, a replay after the
 * restart included, is byte for byte the first answer its client got. Also the shared
 * {@link RestartConformance}: a key and its answer outlive a graceful restart.
 *
 * <p>One run by default; {@code -Dpayments.crash.runs=20} runs it 20 times in a row, each run killing
 * the instance the run before started.
 */
class PaymentsReactiveCrashIT {
    private static final Duration START = Duration.ofSeconds(180);
    private static final int CLIENTS = 8;
    private static final int INTENTS_PER_CLIENT = 12;

    private static ChildJvm service;
    private static volatile int port;

    private static final ServiceTarget TARGET = new ServiceTarget(() -> port, () -> {
        service.terminate();
        start();
    });

    private static synchronized void start() throws Exception {
        service = ChildJvm.start(ServiceChild.class, ServiceChild.READY, Stream.concat(
                Arrays.stream(ServiceDatabase.arguments()), Stream.of("--server.port=0", "--spring.main.banner-mode=off",
                        "--logging.level.root=WARN")).toArray(String[]::new));
        port = Integer.parseInt(service.awaitLine(START).strip());
    }

    private static synchronized void ensureStarted() throws Exception {
        if (service == null) {
            start();
        }
    }

    @AfterAll
    static void stop() throws IOException {
        if (service != null) {
            service.close();
        }
    }

    @Nested
    class Restart extends RestartConformance {
        @Override
        protected RestartableTarget target() {
            try {
                ensureStarted();
            } catch (Exception e) {
                throw new IllegalStateException("the service did not start", e);
            }
            return TARGET;
        }
    }

    @TestFactory
    Stream<DynamicTest> killedUnderLoadItBooksEachIntentOnceAndEveryReplayIsTheFirstAnswer() {
        int runs = Integer.getInteger("payments.crash.runs", 1);
        return IntStream.rangeClosed(1, runs).mapToObj(run -> DynamicTest.dynamicTest("run " + run + " of " + runs,
                PaymentsReactiveCrashIT::killUnderLoad));
    }

    private static void killUnderLoad() throws Exception {
        ensureStarted();
        CrashUnderLoad load = CrashUnderLoad.run(TARGET, TARGET.firstUser(), CLIENTS, INTENTS_PER_CLIENT, () -> {
            service.kill();
            start();
        });

        CrashChecks.assertEachIntentBookedOnce(load, TARGET);
    }
}
