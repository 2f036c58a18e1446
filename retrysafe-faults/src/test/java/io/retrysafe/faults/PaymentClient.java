package io.retrysafe.faults;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code POST /payments} or {@code POST /checkouts} with a key, over real HTTP; every attempt becomes an
 * {@link Answer}, failures included.
 */
final class PaymentClient {
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();
    private final List<String> bases;
    private final AtomicInteger next = new AtomicInteger();
    private final Duration timeout;

    /** @param timeout how long an attempt waits for its answer before it counts as a network error */
    PaymentClient(int port, Duration timeout) {
        this(List.of(port), timeout);
    }

    /**
     * A client of several instances of one service: each request goes to the next instance in turn, as a
     * round-robin balancer in front of them sends it, so that an intent's retries and duplicates meet different
     * instances.
     */
    PaymentClient(List<Integer> ports, Duration timeout) {
        this.bases = ports.stream().map(p -> "http://127.0.0.1:" + p).toList();
        this.timeout = timeout;
    }

    Duration timeout() {
        return timeout;
    }

    /** What an intent asks for: the route it is sent to, and the final answers it may end with. */
    enum Kind {
        /** {@code POST /payments}: one transaction; always {@code 201} (the accounts can afford every intent). */
        PAYMENT("/payments", Set.of(201)),
        /**
         * {@code POST /checkouts}: a phased operation that charges the intent's card at the payment provider;
         * {@code 201}, or {@code 402} when the completer cancelled it (hold given back, charge refunded).
         */
        CHECKOUT("/checkouts", Set.of(201, 402));

        final String path;
        final Set<Integer> finalStatuses;

        Kind(String path, Set<Integer> finalStatuses) {
            this.path = path;
            this.finalStatuses = finalStatuses;
        }
    }

    /** One intent: its kind, a key, its payer, and the body sent unchanged on every attempt; a card for a checkout. */
    record Intent(Kind kind, String key, String user, String account, long amount, String card) {
        /** A payment. */
        Intent(String key, String user, String account, long amount) {
            this(Kind.PAYMENT, key, user, account, amount, null);
        }

        String body() {
            return "{\"account\":\"" + account + "\",\"amount\":" + amount
                    + (card == null ? "" : ",\"card\":\"" + card + "\"") + "}";
        }
    }

    /**
     * What one attempt got: a status and body, or {@code status == -1} and the failure. {@code startNanos}
     * and {@code nanos} place it in time (the latency of the load test).
     */
    record Answer(int attempt, int status, String body, boolean replayed, String failure, long startNanos, long nanos) {
        boolean failed() {
            return status < 0;
        }

        /** Worth a retry with the same key: nothing final was said (in flight, throttled, unavailable, failed). */
        boolean retryable() {
            return status < 0 || status == 408 || status == 409 || status == 425 || status == 429 || status >= 500;
        }

        String label() {
            return status < 0 ? "io-error" : Integer.toString(status);
        }
    }

    private HttpRequest request(Intent intent) {
        String credentials = intent.user() + ":" + intent.user() + "-secret";
        return HttpRequest.newBuilder(URI.create(
                bases.get(Math.floorMod(next.getAndIncrement(), bases.size())) + intent.kind().path)).timeout(timeout)
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(
                        credentials.getBytes(StandardCharsets.UTF_8)))
                .header("Content-Type", "application/json").header("Idempotency-Key", intent.key())
                .POST(HttpRequest.BodyPublishers.ofString(intent.body())).build();
    }

    Answer send(Intent intent, int attempt) throws InterruptedException {
        long start = System.nanoTime();
        try {
            HttpResponse<String> r = http.send(request(intent), HttpResponse.BodyHandlers.ofString());
            return answer(attempt, start, r);
        } catch (IOException e) {
            return new Answer(attempt, -1, null, false, e.getClass().getSimpleName(), start, System.nanoTime() - start);
        }
    }

    CompletableFuture<Answer> sendAsync(Intent intent, int attempt) {
        long start = System.nanoTime();
        return http.sendAsync(request(intent), HttpResponse.BodyHandlers.ofString())
                .thenApply(r -> answer(attempt, start, r))
                .exceptionally(e -> new Answer(attempt, -1, null, false,
                        (e.getCause() == null ? e : e.getCause()).getClass().getSimpleName(), start,
                        System.nanoTime() - start));
    }

    private static Answer answer(int attempt, long start, HttpResponse<String> r) {
        boolean replayed = r.headers().firstValue("Idempotent-Replayed").map("true"::equalsIgnoreCase).orElse(false);
        return new Answer(attempt, r.statusCode(), r.body(), replayed, null, start, System.nanoTime() - start);
    }

    /**
     * The wait before the next attempt: exponential backoff with full jitter, at most 1 s. It ignores
     * {@code Retry-After} on purpose: a client more eager than the server asks for makes more races.
     */
    static long backoffMillis(int attempt, java.util.Random random) {
        long cap = Math.min(1_000L, 50L << Math.min(attempt, 10));
        return 10 + (long) (random.nextDouble() * cap);
    }
}
