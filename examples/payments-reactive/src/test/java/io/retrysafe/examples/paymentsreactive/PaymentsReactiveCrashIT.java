package io.retrysafe.examples.paymentsreactive;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.CrashUnderLoad;
import io.retrysafe.conformance.CrashUnderLoad.Answer;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.conformance.RestartConformance;
import io.retrysafe.conformance.RestartableTarget;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.testservices.ChildJvm;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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

        // What a client sees of the kill: requests in flight end with no HTTP answer at all.
        assertThat(load.cut()).as("requests in flight when the service died, left with no answer").isNotEmpty();
        PaymentsClient client = new PaymentsClient(TARGET);
        for (Map.Entry<String, String> intent : load.accountOf().entrySet()) {
            String key = intent.getKey();
            String account = intent.getValue();
            HttpResponse<byte[]> replay = client.payUntilAnswered(TARGET.firstUser(), key, payment(account, 100),
                    CrashUnderLoad.RETRIED, CrashUnderLoad.RETRY_BOUND, new ArrayList<>());
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).as("replay of %s", key).hasValue("true");
            List<Answer> answers = new ArrayList<>(load.answersOf(key));
            answers.add(Answer.of(replay));
            assertThat(answers).as("every answer of %s", key).containsOnly(answers.get(0));
            assertThat(answers.get(0).status()).as("%s", answers.get(0)).isEqualTo(201);
            assertThat(PaymentsDatabase.payments(account)).as("payments of %s", key).isEqualTo(1);
            assertThat(PaymentsDatabase.balance(account)).as("balance of %s", account).isEqualTo(9_900);
        }
        System.out.println("intents: " + load.accountOf().size() + "; requests cut by the kill: " + load.cut().size()
                + ", refused while it was down: " + load.refused());
    }
}
