package io.retrysafe.conformance;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Clients paying through a target while a process of it is killed: {@code clients} threads each pay
 * {@code intentsPerClient} intents, one after another, every intent on an account of its own and retried
 * with its key until a final answer ({@link PaymentsClient#payUntilAnswered}). Once a quarter of the
 * intents is answered, {@code crash} runs (a SIGKILL and a restart, say); then every client finishes.
 * What each intent was answered, and the requests left with no answer, are kept for the test to judge.
 */
public final class CrashUnderLoad {
    /** How long a client retries one intent: several leases, a restart, and a loaded machine. */
    public static final Duration RETRY_BOUND = Duration.ofSeconds(240);
    /** Statuses a client retries with the same key: in flight, or the service or its upstream unavailable. */
    public static final Set<Integer> RETRIED = Set.of(409, 502, 503, 504);

    /** The crash, run while the clients pay. */
    @FunctionalInterface
    public interface Crash {
        void run() throws Exception;
    }

    private final Map<String, String> accountOf = new ConcurrentHashMap<>();
    private final Map<String, List<Answer>> answersOf = new ConcurrentHashMap<>();
    private final List<IOException> noAnswer = Collections.synchronizedList(new ArrayList<>());

    private CrashUnderLoad() {
    }

    /** Runs the clients as {@code user} against {@code target}, and {@code crash} among them; returns once all are answered. */
    public static CrashUnderLoad run(ConformanceTarget target, Credentials user, int clients, int intentsPerClient,
            Crash crash) throws Exception {
        CrashUnderLoad load = new CrashUnderLoad();
        PaymentsClient client = new PaymentsClient(target);
        AtomicInteger answered = new AtomicInteger();
        // Counted down by the client whose answer makes a quarter, not found by polling: a fast service can
        // answer every intent between two polls, and a crash after the last answer cuts nothing.
        int aQuarter = Math.max(1, clients * intentsPerClient / 4);
        CountDownLatch quarter = new CountDownLatch(1);
        // Every account is opened before the clients start, so that they spend their time paying: a client
        // opening an account when the crash comes has no request in flight for it to cut.
        List<List<String>> keysOf = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < intentsPerClient; i++) {
                String key = UUID.randomUUID().toString();
                load.accountOf.put(key, target.newAccount(10_000));
                keys.add(key);
            }
            keysOf.add(keys);
        }
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        List<Future<?>> running = new ArrayList<>();
        for (List<String> keys : keysOf) {
            running.add(pool.submit(() -> {
                for (String key : keys) {
                    String account = load.accountOf.get(key);
                    HttpResponse<byte[]> r = client.payUntilAnswered(user, key, payment(account, 100), RETRIED,
                            RETRY_BOUND, load.noAnswer);
                    load.answersOf.computeIfAbsent(key, k -> Collections.synchronizedList(new ArrayList<>())).add(Answer.of(r));
                    if (answered.incrementAndGet() == aQuarter) {
                        quarter.countDown();
                    }
                }
                return null;
            }));
        }
        try {
            // Crash once a quarter of the intents is answered: the rest are in flight or not sent yet.
            if (!quarter.await(RETRY_BOUND.toSeconds(), TimeUnit.SECONDS)) {
                for (Future<?> f : running) {
                    if (f.isDone()) {
                        f.get(); // a client that failed says why
                    }
                }
                throw new AssertionError("a quarter of the intents not answered within " + RETRY_BOUND);
            }
            crash.run();
            for (Future<?> f : running) {
                f.get(RETRY_BOUND.toSeconds() * 2, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(load.accountOf).hasSize(clients * intentsPerClient);
        return load;
    }

    /** Each intent's key and the account it pays from. */
    public Map<String, String> accountOf() {
        return accountOf;
    }

    /** The final answers the client got for this intent's key, in order. */
    public List<Answer> answersOf(String key) {
        return List.copyOf(answersOf.get(key));
    }

    /**
     * What a client got as an answer and a replay must repeat: the status, {@code Location},
     * {@code Content-Type} and the body's bytes (kept one byte per char, ISO-8859-1, so that equal
     * answers are equal byte for byte).
     */
    public record Answer(int status, String location, String contentType, String bytes) {
        public static Answer of(HttpResponse<byte[]> r) {
            return new Answer(r.statusCode(), r.headers().firstValue("Location").orElse(null),
                    r.headers().firstValue("Content-Type").orElse(null), new String(r.body(), StandardCharsets.ISO_8859_1));
        }

        /** The body as the UTF-8 text it is. */
        public String body() {
            return new String(bytes.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return status + " Location=" + location + " Content-Type=" + contentType + " " + body();
        }
    }

    /** Requests cut while in flight: no HTTP answer at all (the connection closed). */
    public List<IOException> cut() {
        return noAnswer.stream().filter(e -> !(e instanceof ConnectException)).toList();
    }

    /** Requests refused while the service was down (no connection). */
    public long refused() {
        return noAnswer.stream().filter(e -> e instanceof ConnectException).count();
    }
}
