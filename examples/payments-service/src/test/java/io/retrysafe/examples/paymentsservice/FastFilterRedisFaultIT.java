package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.testservices.TestRedis;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service with the Redis fast filter on, under load, while its Redis (a private server of this
 * test) is killed and started again, twice. Clients keep paying throughout, each intent with its own
 * key, retried sequentially and concurrently. Without Redis every request goes to PostgreSQL, so:
 * every key's answers are the same (but for 409 refusals of a duplicate in flight), no answer is a
 * 5xx (the filter never fails a request: PostgreSQL decides, Redis only answers early), every key
 * pays once, and every request is answered.
 *
 * <p>The phases follow what an operator could observe: the filter serves from Redis when the
 * server's {@code keyspace_hits} grow (lookups that found an entry) and the {@code retrysafe} health
 * contributor reports the breaker {@code CLOSED}; Redis is down for as long as it takes the service
 * to answer a number of requests without it.
 */
class FastFilterRedisFaultIT {
    private static final Duration START = Duration.ofSeconds(180);
    private static final Duration PHASE = Duration.ofSeconds(120);
    private static final int CLIENTS = 6;
    private static final int ACCOUNTS = 3;
    private static final long INITIAL_BALANCE = 1_000_000_000L;
    /** Answers the service gives while Redis is down, per outage. */
    private static final int ANSWERS_WITHOUT_REDIS = 150;
    /** Lookups that found an entry in a (re)started Redis before it counts as used. */
    private static final long HITS_IN_USE = 25;
    private static final int OUTAGES = 2;
    private static final Pattern PAYMENT_ID = Pattern.compile("\"id\":\"([0-9a-f-]{36})\"");

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    @TempDir
    Path dir;

    /** One answer the service gave to one request of an intent. */
    private record Answer(int status, String body, boolean replayed) {
    }

    /** One payment a client means to make: one key, one body, sent as often as it takes. */
    private record Intent(String key, String user, String account, long amount, Queue<Answer> answers) {
        Intent(String user, String account, long amount) {
            this(UUID.randomUUID().toString(), user, account, amount, new ConcurrentLinkedQueue<>());
        }

        boolean settled() {
            return answers.stream().anyMatch(a -> a.status() != 409);
        }
    }

    private final Queue<Intent> intents = new ConcurrentLinkedQueue<>();
    private final Queue<String> failures = new ConcurrentLinkedQueue<>();
    private final AtomicLong answered = new AtomicLong();
    private final AtomicBoolean stop = new AtomicBoolean();

    @Test
    void redisKilledAndRestartedTwiceUnderLoadChangesNoAnswerAndPaysEveryKeyOnce() throws Exception {
        Path redisDir = Files.createDirectories(dir.resolve("redis"));
        try (TestRedis.Server redis = TestRedis.startServer(redisDir)) {
            List<String> args = new ArrayList<>(List.of(ServiceDatabase.arguments()));
            args.add("--management.endpoint.health.show-details=always");
            Map<String, String> env = Map.of("RETRYSAFE_FAST_FILTER", "true",
                    "RETRYSAFE_REDIS_URI", "redis://127.0.0.1:" + redis.port());
            try (ServiceProcess service = ServiceProcess.start(dir, "service", env, args.toArray(String[]::new))) {
                int port = service.awaitReady(START);
                List<String> accounts = new ArrayList<>();
                for (int i = 0; i < ACCOUNTS; i++) {
                    accounts.add(newAccount(INITIAL_BALANCE));
                }
                List<Thread> clients = new ArrayList<>();
                for (int i = 0; i < CLIENTS; i++) {
                    String user = i % 2 == 0 ? ServiceITSupport.ALICE : ServiceITSupport.BOB;
                    Thread t = new Thread(() -> client(port, user, accounts), "client-" + i);
                    t.start();
                    clients.add(t);
                }
                try {
                    awaitFastFilterInUse(redis, port, service);
                    for (int outage = 1; outage <= OUTAGES; outage++) {
                        redis.kill();
                        long atKill = answered.get();
                        // The breaker opens; then, still without Redis, a call fails (a probe: one more
                        // error counted), so the breaker's backoff has grown when Redis comes back.
                        await("the breaker open (outage " + outage + ")").atMost(PHASE).pollInterval(Duration.ofMillis(20))
                                .until(() -> health(port).contains("\"breaker\":\"OPEN\"") || !failures.isEmpty());
                        long errorsWhenOpen = fastFilterErrors(port);
                        await("a failed probe, and answers without Redis (outage " + outage + ")").atMost(PHASE)
                                .pollInterval(Duration.ofMillis(50))
                                .until(() -> fastFilterErrors(port) > errorsWhenOpen
                                        && answered.get() - atKill >= ANSWERS_WITHOUT_REDIS || !failures.isEmpty());
                        redis.restart();
                        awaitFastFilterInUse(redis, port, service);
                    }
                } finally {
                    stop.set(true);
                    for (Thread t : clients) {
                        t.join(TimeUnit.SECONDS.toMillis(120));
                        assertThat(t.isAlive()).as(t.getName() + " still running").isFalse();
                    }
                }
                assertThat(failures).as("requests the service did not answer\n" + tail(service)).isEmpty();
                assertAnswersAndPayments(accounts, service);
                // What the breaker did, for whoever reads the test's output.
                service.log().lines().filter(l -> l.contains("redis-fast-filter")).forEach(System.err::println);
            }
        }
    }

    /** Until a (re)started Redis is used again: entries found in it, and the breaker closed. */
    private void awaitFastFilterInUse(TestRedis.Server redis, int port, ServiceProcess service) {
        RedisClient client = RedisClient.create(redis.uri());
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            await("the fast filter serving from Redis again").atMost(PHASE).pollInterval(Duration.ofMillis(50))
                    .until(() -> keyspaceHits(c.sync().info("stats")) >= HITS_IN_USE || !failures.isEmpty());
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
        await("the fast filter's breaker closed").atMost(PHASE).pollInterval(Duration.ofMillis(50))
                .until(() -> health(port).contains("\"breaker\":\"CLOSED\"") || !failures.isEmpty());
        assertThat(failures).as("requests the service did not answer\n" + tail(service)).isEmpty();
    }

    /** {@code retrysafe_store_errors_total} of the fast filter, all operations: failed calls to Redis. */
    private long fastFilterErrors(int port) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                .timeout(Duration.ofSeconds(30)).GET().build();
        String metrics = http.send(request, HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = Pattern.compile("(?m)^retrysafe_store_errors_total\\{[^}]*store=\"redis-fast-filter\"[^}]*} (\\S+)$")
                .matcher(metrics);
        double sum = 0;
        while (m.find()) {
            sum += Double.parseDouble(m.group(1));
        }
        return (long) sum;
    }

    private static long keyspaceHits(String info) {
        Matcher m = Pattern.compile("keyspace_hits:(\\d+)").matcher(info);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    private String health(int port) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health/retrysafe"))
                .timeout(Duration.ofSeconds(30)).GET().build();
        return http.send(request, HttpResponse.BodyHandlers.ofString()).body();
    }

    // ------------------------------------------------------------------------------------------
    // The load: intents, each retried with the same key and body
    // ------------------------------------------------------------------------------------------

    private void client(int port, String user, List<String> accounts) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long n = 0;
        while (!stop.get()) {
            Intent intent = new Intent(user, accounts.get(random.nextInt(accounts.size())), 1 + random.nextInt(100));
            intents.add(intent);
            // Every third intent: a duplicate in flight at the same time as the first request.
            CompletableFuture<Void> duplicate = n++ % 3 == 0
                    ? http.sendAsync(request(port, intent), HttpResponse.BodyHandlers.ofString())
                            .handle((response, error) -> record(intent, response, error))
                    : CompletableFuture.completedFuture(null);
            send(port, intent);
            duplicate.join();
            int retries = 1 + random.nextInt(2);
            for (int i = 0; i < retries; i++) {
                send(port, intent);
            }
            // A client retries until it has an answer other than "in progress" (bounded).
            for (int i = 0; i < 200 && !intent.settled() && failures.isEmpty(); i++) {
                pause();
                send(port, intent);
            }
            if (!intent.settled()) {
                failures.add("key " + intent.key() + " got nothing but 409: " + intent.answers());
            }
            if (!failures.isEmpty()) {
                return;
            }
        }
    }

    private void send(int port, Intent intent) {
        HttpResponse<String> response = null;
        Throwable error = null;
        try {
            response = http.send(request(port, intent), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            error = e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            error = e;
        }
        record(intent, response, error);
    }

    private Void record(Intent intent, HttpResponse<String> response, Throwable error) {
        if (error != null) {
            failures.add("key " + intent.key() + ": no answer: " + error);
        } else {
            intent.answers().add(new Answer(response.statusCode(), response.body(),
                    response.headers().firstValue("Idempotent-Replayed").isPresent()));
            answered.incrementAndGet();
        }
        return null;
    }

    private static HttpRequest request(int port, Intent intent) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .timeout(Duration.ofSeconds(30))
                .header("Authorization", ServiceITSupport.basic(intent.user()))
                .header("Content-Type", "application/json").header("Idempotency-Key", intent.key())
                .POST(HttpRequest.BodyPublishers.ofString(ServiceITSupport.payment(intent.account(), intent.amount())))
                .build();
    }

    /** A client's pause between retries of a refused duplicate, shorter than its Retry-After to add load. */
    private static void pause() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------------------------------
    // What the clients saw, and what PostgreSQL holds
    // ------------------------------------------------------------------------------------------

    private void assertAnswersAndPayments(List<String> accounts, ServiceProcess service) throws Exception {
        List<Intent> all = List.copyOf(intents);
        long requests = all.stream().mapToLong(i -> i.answers().size()).sum();
        assertThat(all).hasSizeGreaterThan(CLIENTS);
        assertThat(all.stream().flatMap(i -> i.answers().stream()).filter(a -> a.status() >= 500).toList())
                .as("5xx answers (of %d)\n%s", requests, tail(service)).isEmpty();

        Map<String, Long> paid = new HashMap<>();
        List<String> paymentIds = new ArrayList<>();
        for (Intent intent : all) {
            List<Answer> settled = intent.answers().stream().filter(a -> a.status() != 409).toList();
            assertThat(settled).as("key %s", intent.key()).isNotEmpty();
            Answer first = settled.get(0);
            assertThat(first.status()).as("key %s: %s", intent.key(), first.body()).isEqualTo(201);
            assertThat(settled).as("key %s: every answer but 409 the same", intent.key())
                    .allSatisfy(a -> {
                        assertThat(a.status()).isEqualTo(first.status());
                        assertThat(a.body()).isEqualTo(first.body());
                    });
            assertThat(settled.stream().filter(a -> !a.replayed()).count())
                    .as("key %s: executed answers", intent.key()).isLessThanOrEqualTo(1);
            Matcher id = PAYMENT_ID.matcher(first.body());
            assertThat(id.find()).as(first.body()).isTrue();
            paymentIds.add(id.group(1));
            paid.merge(intent.account(), intent.amount(), Long::sum);
        }
        assertThat(paymentIds).as("one payment per key").doesNotHaveDuplicates();

        try (Connection c = PaymentsDatabase.connect()) { // one connection: the shared server has few
            Array ids = c.createArrayOf("varchar", paymentIds.toArray());
            Array accountIds = c.createArrayOf("varchar", accounts.toArray());
            assertThat(query(c, "SELECT count(*) FROM payment WHERE id::text = ANY (?)", ids))
                    .as("the payment of every key is in the database").isEqualTo(all.size());
            assertThat(query(c, "SELECT count(*) FROM payment WHERE account = ANY (?)", accountIds))
                    .as("no payment but one per key").isEqualTo(all.size());
            for (String account : accounts) {
                long sum = query(c, "SELECT coalesce(sum(amount), 0) FROM payment WHERE account = ?", account);
                assertThat(sum).as("payments to %s", account).isEqualTo(paid.getOrDefault(account, 0L));
                assertThat(query(c, "SELECT balance FROM account WHERE id = ?", account)).as("balance of %s", account)
                        .isEqualTo(INITIAL_BALANCE - sum);
            }
        }
        System.err.printf("%d intents, %d requests, answers by status %s%n", all.size(), requests,
                all.stream().flatMap(i -> i.answers().stream())
                        .collect(Collectors.groupingBy(a -> a.status() + (a.replayed() ? " replayed" : ""),
                                Collectors.counting())));
    }

    private static long query(Connection c, String sql, Object arg) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, arg);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static String tail(ServiceProcess service) {
        String log = service.log();
        return log.length() <= 20_000 ? log : log.substring(log.length() - 20_000);
    }
}
