package io.retrysafe.examples.gateway;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.Hold;
import io.retrysafe.conformance.PaymentsClient;
import java.io.IOException;
import java.net.ConnectException;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Processes killed with SIGKILL, as an operator's machine loses them: the upstream while it serves a
 * request, the gateway while clients pay through it. Clients retry with the same key until they get a
 * final answer. Afterwards no intent is booked twice, and every answer an intent got is the same.
 */
class GatewayCrashIT {
    /** How long a client retries one intent: several leases, a restart, and a loaded machine. */
    private static final Duration RETRY_BOUND = Duration.ofSeconds(120);
    /** Statuses a client retries with the same key: in flight, or the gateway or upstream unavailable. */
    private static final Set<Integer> RETRIED = Set.of(409, 502, 503, 504);

    @TempDir
    Path dir;

    /**
     * A client retrying one intent until a final answer. A request with no answer is retried too, and
     * noted in {@code noAnswer}: cut while it was in flight, or refused while the gateway was down.
     */
    private static HttpResponse<String> payUntilAnswered(PaymentsClient client, String key, String account,
            List<IOException> noAnswer) throws Exception {
        long deadline = System.nanoTime() + RETRY_BOUND.toNanos();
        while (true) {
            try {
                HttpResponse<String> r = client.send(client.postPayment(GatewayTarget.ALICE, key, payment(account, 100)));
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

    @Test
    void theUpstreamKilledWhileServingARequestRunsItOnceAfterItsRestart() throws Exception {
        try (Upstream upstream = Upstream.start(dir); Gateway gateway = Gateway.start(dir, upstream, Gateway.Store.POSTGRESQL)) {
            GatewayTarget target = new GatewayTarget(gateway, upstream);
            PaymentsClient client = new PaymentsClient(target);
            String account = upstream.database().newAccount(10_000);
            String key = UUID.randomUUID().toString();

            Hold hold = upstream.hold(key);
            CompletableFuture<HttpResponse<String>> first = client.sendAsync(
                    hold.mark(client.postPayment(GatewayTarget.ALICE, key, payment(account, 100))));
            hold.awaitArrived();
            upstream.kill();

            // The gateway lost the upstream after it sent the request: it cannot know whether the payment
            // was made, so it says so, and keeps the key in progress until the lease ends.
            HttpResponse<String> lost = first.get(60, TimeUnit.SECONDS);
            assertThat(lost.statusCode()).as(lost.body()).isEqualTo(503);
            assertThat(lost.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(lost.body()).contains("\"type\":\"/problems/outcome-unknown\"");
            assertThat(lost.headers().firstValue("Retry-After")).isPresent();
            assertThat(upstream.database().executions(account)).isZero();

            upstream.restart();
            HttpResponse<String> answered = payUntilAnswered(client, key, account, new ArrayList<>());
            assertThat(answered.statusCode()).as(answered.body()).isEqualTo(201);
            assertThat(answered.headers().firstValue("Idempotent-Replayed")).isEmpty();
            HttpResponse<String> replay = client.send(client.postPayment(GatewayTarget.ALICE, key, payment(account, 100)));
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(replay.body()).isEqualTo(answered.body());
            assertThat(upstream.database().executions(account)).isEqualTo(1);
            assertThat(upstream.database().payments(account)).isEqualTo(1);
        }
    }

    @Test
    void theGatewayKilledUnderLoadBooksNoIntentTwiceAndEveryAnswerOfAnIntentIsTheSame() throws Exception {
        int clients = 8;
        int intentsPerClient = 12;
        try (Upstream upstream = Upstream.start(dir); Gateway gateway = Gateway.start(dir, upstream, Gateway.Store.POSTGRESQL)) {
            PaymentsClient client = new PaymentsClient(new GatewayTarget(gateway, upstream));
            Map<String, String> accountOf = new ConcurrentHashMap<>();
            Map<String, List<String>> answersOf = new ConcurrentHashMap<>();
            List<IOException> noAnswer = Collections.synchronizedList(new ArrayList<>());
            AtomicInteger answered = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(clients);
            List<Future<?>> running = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                running.add(pool.submit(() -> {
                    for (int i = 0; i < intentsPerClient; i++) {
                        String key = UUID.randomUUID().toString();
                        String account = upstream.database().newAccount(10_000);
                        accountOf.put(key, account);
                        HttpResponse<String> r = payUntilAnswered(client, key, account, noAnswer);
                        answersOf.computeIfAbsent(key, k -> new ArrayList<>()).add(r.statusCode() + " " + r.body());
                        answered.incrementAndGet();
                    }
                    return null;
                }));
            }
            try {
                // Kill it once a quarter of the intents is answered: the rest are in flight or not sent yet.
                long deadline = System.nanoTime() + RETRY_BOUND.toNanos();
                while (answered.get() < clients * intentsPerClient / 4) {
                    assertThat(System.nanoTime()).as("a quarter of the intents answered in time").isLessThan(deadline);
                    Thread.sleep(20);
                }
                gateway.kill();
                gateway.restart();
                for (Future<?> f : running) {
                    f.get(RETRY_BOUND.toSeconds() * 2, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }

            // What a client sees of the kill: requests in flight end with no HTTP answer at all (the
            // connection closes), and new ones are refused until the gateway is back.
            List<IOException> cut = noAnswer.stream().filter(e -> !(e instanceof ConnectException)).toList();
            assertThat(cut).as("requests in flight when the gateway died, left with no answer").isNotEmpty();
            int takenOver = 0;
            for (Map.Entry<String, String> intent : accountOf.entrySet()) {
                String key = intent.getKey();
                String account = intent.getValue();
                HttpResponse<String> replay = client.send(client.postPayment(GatewayTarget.ALICE, key, payment(account, 100)));
                List<String> answers = new ArrayList<>(answersOf.get(key));
                answers.add(replay.statusCode() + " " + replay.body());
                assertThat(answers).as("every answer of %s", key).containsOnly(answers.get(0));
                assertThat(answers.get(0)).startsWith("201 ");
                assertThat(upstream.database().payments(account)).as("payments of %s", key).isEqualTo(1);
                if (upstream.database().executions(account) > 1) {
                    takenOver++;
                }
            }
            // What the guard in the upstream caught: intents forwarded before the kill whose answer the
            // gateway never stored, run again after their lease, answered with the payment already booked.
            System.out.println("intents executed twice by the upstream, booked once: " + takenOver + " of "
                    + accountOf.size() + "; requests cut by the kill: " + cut.size() + ", refused while it was down: "
                    + (noAnswer.size() - cut.size()));
        }
    }
}
