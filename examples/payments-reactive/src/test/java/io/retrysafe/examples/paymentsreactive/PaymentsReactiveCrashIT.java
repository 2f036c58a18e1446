package io.retrysafe.examples.paymentsreactive;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.testservices.ChildJvm;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The service killed with SIGKILL while clients pay through it, and started again on the same
 * database. Clients retry every intent with its key until they get a final answer, across the kill.
 * Afterwards each intent has exactly one payment, and every answer to it, the replays included, is
 * byte for byte the first answer its client got.
 *
 * <p>One run by default; {@code -Dpayments.crash.runs=20} runs it 20 times in a row, each run killing
 * the instance the run before started.
 */
class PaymentsReactiveCrashIT {
    private static final Duration START = Duration.ofSeconds(180);
    /** How long a client retries one intent: a restart on a loaded machine, and the lock bound. */
    private static final Duration RETRY_BOUND = Duration.ofSeconds(240);
    /** Answers a client retries with the same key: in flight, or the service or its database unavailable. */
    private static final Set<Integer> RETRIED = Set.of(409, 502, 503, 504);
    private static final Credentials ALICE = Credentials.basic(ServiceTarget.ALICE, ServiceTarget.ALICE + "-secret");
    private static final int CLIENTS = 8;
    private static final int INTENTS_PER_CLIENT = 12;

    private static ChildJvm service;
    private static volatile int port;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    /** An answer as the client got it: what must be the same, byte for byte, on every replay. */
    record Answer(int status, String location, String contentType, List<Byte> body) {
        static Answer of(HttpResponse<byte[]> r) {
            byte[] bytes = r.body();
            List<Byte> body = new ArrayList<>(bytes.length);
            for (byte b : bytes) {
                body.add(b);
            }
            return new Answer(r.statusCode(), r.headers().firstValue("Location").orElse(null),
                    r.headers().firstValue("Content-Type").orElse(null), body);
        }

        @Override
        public String toString() {
            byte[] bytes = new byte[body.size()];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = body.get(i);
            }
            return status + " " + location + " " + contentType + " " + new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    private static void start() throws Exception {
        service = ChildJvm.start(ServiceChild.class, ServiceChild.READY, Stream.concat(
                Arrays.stream(ServiceDatabase.arguments()), Stream.of("--server.port=0", "--spring.main.banner-mode=off",
                        "--logging.level.root=WARN")).toArray(String[]::new));
        port = Integer.parseInt(service.awaitLine(START).strip());
    }

    @AfterAll
    static void stop() throws IOException {
        if (service != null) {
            service.close();
        }
    }

    @TestFactory
    Stream<DynamicTest> killedUnderLoadItBooksEachIntentOnceAndEveryReplayIsTheFirstAnswer() {
        int runs = Integer.getInteger("payments.crash.runs", 1);
        return IntStream.rangeClosed(1, runs).mapToObj(run -> DynamicTest.dynamicTest("run " + run + " of " + runs,
                this::killUnderLoad));
    }

    private HttpResponse<byte[]> send(String key, String account) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .timeout(PaymentsClient.REQUEST_TIMEOUT).header("Authorization", ALICE.authorization())
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(payment(account, 100))).build();
        return http.send(request, HttpResponse.BodyHandlers.ofByteArray());
    }

    /**
     * A client retrying one intent until a final answer. A request with no answer (cut by the kill,
     * or refused while the service was down) is retried too, and noted in {@code noAnswer}.
     */
    private HttpResponse<byte[]> payUntilAnswered(String key, String account, List<IOException> noAnswer)
            throws Exception {
        long deadline = System.nanoTime() + RETRY_BOUND.toNanos();
        while (true) {
            try {
                HttpResponse<byte[]> r = send(key, account);
                if (!RETRIED.contains(r.statusCode())) {
                    return r;
                }
            } catch (IOException e) {
                noAnswer.add(e);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no final answer for " + key + " within " + RETRY_BOUND);
            }
            Thread.sleep(100); // a client's pause between retries
        }
    }

    private void killUnderLoad() throws Exception {
        if (service == null) {
            start();
        }
        Map<String, String> accountOf = new ConcurrentHashMap<>();
        Map<String, List<Answer>> answersOf = new ConcurrentHashMap<>();
        List<IOException> noAnswer = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger answered = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
        List<Future<?>> running = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            running.add(pool.submit(() -> {
                for (int i = 0; i < INTENTS_PER_CLIENT; i++) {
                    String key = UUID.randomUUID().toString();
                    String account = ServiceDatabase.newAccount(10_000);
                    accountOf.put(key, account);
                    HttpResponse<byte[]> r = payUntilAnswered(key, account, noAnswer);
                    answersOf.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>()))
                            .add(Answer.of(r));
                    answered.incrementAndGet();
                }
                return null;
            }));
        }
        try {
            // Kill it once a quarter of the intents is answered: the rest are in flight or not sent yet.
            long deadline = System.nanoTime() + RETRY_BOUND.toNanos();
            while (answered.get() < CLIENTS * INTENTS_PER_CLIENT / 4) {
                assertThat(System.nanoTime()).as("a quarter of the intents answered in time").isLessThan(deadline);
                Thread.sleep(20);
            }
            service.kill();
            start();
            for (Future<?> f : running) {
                f.get(RETRY_BOUND.toSeconds() * 2, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        // What a client sees of the kill: requests in flight end with no HTTP answer at all.
        List<IOException> cut = noAnswer.stream().filter(e -> !(e instanceof ConnectException)).toList();
        assertThat(cut).as("requests in flight when the service died, left with no answer").isNotEmpty();
        assertThat(accountOf).hasSize(CLIENTS * INTENTS_PER_CLIENT);
        for (Map.Entry<String, String> intent : accountOf.entrySet()) {
            String key = intent.getKey();
            String account = intent.getValue();
            HttpResponse<byte[]> replay = send(key, account);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).as("replay of %s", key).hasValue("true");
            List<Answer> answers = new ArrayList<>(answersOf.get(key));
            answers.add(Answer.of(replay));
            assertThat(answers).as("every answer of %s", key).containsOnly(answers.get(0));
            assertThat(answers.get(0).status()).as("%s", answers.get(0)).isEqualTo(201);
            assertThat(ServiceDatabase.payments(account)).as("payments of %s", key).isEqualTo(1);
            assertThat(ServiceDatabase.balance(account)).as("balance of %s", account).isEqualTo(9_900);
        }
        System.out.println("intents: " + accountOf.size() + "; requests cut by the kill: " + cut.size()
                + ", refused while it was down: " + (noAnswer.size() - cut.size()));
    }
}
