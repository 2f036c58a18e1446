package io.retrysafe.conformance;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A client of a {@link ConformanceTarget}'s {@code POST /payments} over real HTTP/1.1, for the suite
 * and for a target's own extra tests.
 */
public final class PaymentsClient {
    /** How long one request may take: a duplicate may wait for the first before it is answered. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);
    /** A client's pause between retries of one intent ({@link #payUntilAnswered}). */
    public static final Duration RETRY_PAUSE = Duration.ofMillis(100);

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private final ConformanceTarget target;

    public PaymentsClient(ConformanceTarget target) {
        this.target = target;
    }

    /** {@code {"account":"…","amount":…}}, members in that order. */
    public static String payment(String account, long amount) {
        return "{\"account\":\"" + account + "\",\"amount\":" + amount + "}";
    }

    /** A request to {@code path} of the target, as {@code user} (null: no credentials). */
    public HttpRequest.Builder request(Credentials user, String path) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(target.baseUri() + path)).timeout(REQUEST_TIMEOUT);
        return user == null ? b : b.header("Authorization", user.authorization());
    }

    /** {@code POST /payments} of this JSON body, as {@code user}, under {@code key} (null: no key, no user). */
    public HttpRequest.Builder postPayment(Credentials user, String key, String body) {
        HttpRequest.Builder b = request(user, "/payments").header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        return key == null ? b : b.header("Idempotency-Key", key);
    }

    public HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    public CompletableFuture<HttpResponse<String>> sendAsync(HttpRequest.Builder request) {
        return http.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Sends {@code n} copies of the request at once, each from a thread of its own released by one latch,
     * and returns every answer, in no particular order.
     */
    public List<HttpResponse<String>> sendAtOnce(int n, Supplier<HttpRequest.Builder> request) throws Exception {
        List<HttpResponse<String>> answers = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<HttpResponse<String>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return send(request.get());
                }));
            }
            start.countDown();
            for (Future<HttpResponse<String>> f : futures) {
                answers.add(f.get(2 * REQUEST_TIMEOUT.toSeconds(), TimeUnit.SECONDS));
            }
        } finally {
            pool.shutdownNow();
        }
        return answers;
    }

    public HttpResponse<String> get(Credentials user, String path) throws Exception {
        return send(request(user, path).GET());
    }

    /**
     * A client retrying one intent with the same key until it gets a final answer: any status but
     * {@code retried}, within {@code bound}, pausing between attempts. A request with no answer (cut while
     * in flight, or refused while the service was down) is retried too, and noted in {@code noAnswer}.
     * The answer's body is kept as the bytes the service sent.
     */
    public HttpResponse<byte[]> payUntilAnswered(Credentials user, String key, String body, Set<Integer> retried,
            Duration bound, List<IOException> noAnswer) throws Exception {
        long deadline = System.nanoTime() + bound.toNanos();
        while (true) {
            try {
                HttpResponse<byte[]> r = http.send(postPayment(user, key, body).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                if (!retried.contains(r.statusCode())) {
                    return r;
                }
            } catch (IOException e) {
                noAnswer.add(e);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no final answer for " + key + " within " + bound);
            }
            Thread.sleep(RETRY_PAUSE.toMillis());
        }
    }
}
