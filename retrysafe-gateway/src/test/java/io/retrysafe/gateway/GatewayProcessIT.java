package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway as a process of its own ({@link GatewayMain}, as the runnable jar starts it), on PostgreSQL: killed
 * with SIGKILL under load and started again, alone or as one of three instances sharing the store, and stopped with
 * SIGTERM while a request is in flight, answered within the drain timeout or not.
 */
class GatewayProcessIT {
    private static final Duration START = Duration.ofSeconds(60);
    private static final String TENANT = "acme";

    @TempDir
    Path dir;
    private TestUpstream upstream;
    private final String table = TestStores.table();
    private int port;
    private Path config;
    /** Started by the test thread, and by the restarts in the background. */
    private final List<ChildJvm> children = new CopyOnWriteArrayList<>();

    @BeforeEach
    void configure() throws IOException {
        upstream = TestUpstream.start();
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        // The child inherits this JVM's environment, not the test's map: no password-env for an empty password.
        String store = TestStores.postgres(table);
        if (TestDatabases.postgresPassword().isEmpty()) {
            store = store.replaceAll("(?m)^password-env:.*\\n", "");
        }
        config = dir.resolve("gateway.yaml");
        Files.writeString(config, """
                listen:
                  port: %d
                  drain-timeout: 20s
                admin:
                  port: 0
                upstream:
                  url: %s
                  connect-timeout: 10s
                  response-timeout: 20s
                scope:
                  trusted-header:
                    name: X-Tenant
                store:
                %s
                idempotency:
                  lease: 2s
                routes:
                  - method: POST
                    path: /payments
                """.formatted(port, upstream.url(), store.indent(2).stripTrailing()));
    }

    @AfterEach
    void stop() throws IOException {
        for (ChildJvm child : children) {
            child.close();
        }
        upstream.close();
    }

    private ChildJvm startGateway() throws IOException, InterruptedException {
        return startGateway(port);
    }

    /** A gateway on {@link #config}, listening on {@code on}. */
    private ChildJvm startGateway(int on) throws IOException, InterruptedException {
        Path file = config;
        if (on != port) {
            file = dir.resolve("gateway-" + on + ".yaml");
            Files.writeString(file, Files.readString(config).replace("port: " + port + "\n", "port: " + on + "\n"));
        }
        ChildJvm child = ChildJvm.start(GatewayMain.class, "retrysafe-gateway", "--config", file.toString());
        children.add(child);
        assertThat(child.awaitLine(START)).startsWith("listening on port " + on + " (admin: ");
        return child;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void afterSigkillUnderLoadAndClientRetriesEveryIntentHasOneEffectAndOneAnswer() throws Exception {
        ChildJvm[] gateways = {startGateway()};
        underLoadKillAndRestart(gateways, new int[] {port}, 40, (key, attempt) -> port);
    }

    /**
     * Three gateways on one store in front of one upstream, as behind a load balancer: each retry of a client goes to
     * the next instance, and instances are killed with SIGKILL under load, each started again. Keys are shared
     * through the store, so a retry that reaches another instance is answered as the first would be.
     */
    @Test
    void severalInstancesOnOneStoreWithRetriesOnAnyAndOneKilledStillGiveOneEffectAndOneAnswer() throws Exception {
        int[] ports = {port, freePort(), freePort()};
        ChildJvm[] gateways = new ChildJvm[ports.length];
        for (int i = 0; i < ports.length; i++) {
            gateways[i] = startGateway(ports[i]);
        }
        // Three instances answer three times as fast: more intents, so that the second kill finds some in flight.
        underLoadKillAndRestart(gateways, ports, 160, (key, attempt) -> ports[((key.hashCode() & 0xff) + attempt) % 3]);
    }

    /**
     * {@code intents} intents, each a client that retries with its key until it has an answer and then asks once more; meanwhile
     * {@code gateways[0]}, then the last of them, is killed while requests are in flight at the upstream, and started
     * again. The upstream makes one payment per key but sees every send: no two sends of a key may overlap, each
     * re-send is a later attempt, and every intent ends with one effect and one answer, replayed alike.
     *
     * @param instance the port a client's attempt goes to
     */
    private void underLoadKillAndRestart(ChildJvm[] gateways, int[] ports, int intents,
            java.util.function.BiFunction<String, Integer, Integer> instance) throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < intents; i++) {
            keys.add(UUID.randomUUID().toString());
        }
        Map<String, List<String>> answers = new ConcurrentHashMap<>();
        Map<String, Integer> refusals = new ConcurrentHashMap<>();
        // Per key, the instance its client's current attempt went to.
        Map<String, Integer> sentTo = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService clients = Executors.newFixedThreadPool(8);
        List<Future<?>> work = new ArrayList<>();
        for (String key : keys) {
            work.add(clients.submit(() -> {
                // A client that retries with the same key until it has an answer, then asks once more (a replay).
                for (int attempt = 0; !stop.get() && answers.getOrDefault(key, List.of()).size() < 2; attempt++) {
                    int on = instance.apply(key, attempt);
                    sentTo.put(key, on);
                    GatewayHttp client = new GatewayHttp(on);
                    try {
                        HttpResponse<String> r = client.send(client.post("/payments?delay=100&remember", null, key,
                                "{\"amount\":1}").header("X-Tenant", TENANT));
                        if (r.statusCode() == 201) {
                            answers.computeIfAbsent(key, k -> new ArrayList<>()).add(r.body());
                            continue;
                        }
                        refusals.merge(r.statusCode() + " " + r.body().replaceAll("\"detail\":\"[^\"]*\"", ""), 1,
                                Integer::sum);
                        assertThat(r.statusCode()).as(r.body()).isIn(409, 503);
                    } catch (IOException e) {
                        // The gateway is down: try again, as a client would.
                        refusals.merge(e.getClass().getSimpleName(), 1, Integer::sum);
                    }
                    Thread.sleep(100);
                }
                return null;
            }));
        }
        // Kill one while requests it sent are in flight at the upstream, twice, and start it again each time. It starts
        // again in the background: on a loaded machine a JVM's start can outlast the clients' remaining work, and the
        // second kill must still find requests in flight.
        CompletableFuture<?>[] restarted = new CompletableFuture<?>[gateways.length];
        for (int kill = 1; kill <= 2; kill++) {
            int answered = kill * intents / 4;
            int victim = kill == 1 ? 0 : gateways.length - 1;
            try {
                awaitCondition(() -> answers.size() >= answered && justSentThrough(ports[victim], sentTo) > 0,
                        Duration.ofSeconds(60), "answers before kill " + kill);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new AssertionError("answers " + answers.size() + ", in flight through the victim "
                        + justSentThrough(ports[victim], sentTo) + ", refusals " + refusals, e);
            }
            if (restarted[victim] != null) {
                restarted[victim].get(60, TimeUnit.SECONDS); // up: requests went through it
            }
            gateways[victim].kill();
            restarted[victim] = CompletableFuture.runAsync(() -> {
                try {
                    gateways[victim] = startGateway(ports[victim]);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            });
        }
        try {
            for (Future<?> f : work) {
                f.get(120, TimeUnit.SECONDS);
            }
            for (CompletableFuture<?> r : restarted) {
                if (r != null) {
                    r.get(60, TimeUnit.SECONDS);
                }
            }
        } finally {
            stop.set(true);
            clients.shutdownNow();
        }

        assertThat(keys).as("some intent was in flight at a kill, and sent again after it")
                .anySatisfy(key -> assertThat(upstream.history.get(key)).hasSizeGreaterThan(1));
        for (String key : keys) {
            List<String> seen = answers.get(key);
            assertThat(seen).as("answers of %s", key).hasSize(2);
            assertThat(seen.get(1)).as("the replay of %s equals the first answer", key).isEqualTo(seen.get(0));
            assertThat(upstream.effects(key)).as("effects of %s", key).isEqualTo(1);
            List<TestUpstream.Call> calls = List.copyOf(upstream.history.get(key));
            for (int i = 1; i < calls.size(); i++) {
                // Sent again only after the crash, once the earlier attempt had ended: never two at once, and each
                // time as a later attempt, so that the upstream can tell a re-send from a new intent.
                assertThat(calls.get(i).began).as("call %d of %s began after the one before ended", i, key)
                        .isGreaterThan(calls.get(i - 1).ended);
                assertThat(Integer.parseInt(calls.get(i).attempt)).as("attempt of call %d of %s", i, key)
                        .isGreaterThan(Integer.parseInt(calls.get(i - 1).attempt));
            }
        }
    }

    @Test
    void sigtermLetsTheRequestInFlightFinishAndRecordsItsOutcome() throws Exception {
        ChildJvm gateway = startGateway();
        GatewayHttp client = new GatewayHttp(port);
        String key = UUID.randomUUID().toString();
        CompletableFuture<HttpResponse<String>> inFlight = heldAtTheUpstream(client, key);

        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> {
            try {
                return gateway.terminate();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        // The gateway waits for its request in flight; the upstream answers only now.
        upstream.release(key);

        HttpResponse<String> answer = inFlight.get(30, TimeUnit.SECONDS);
        assertThat(answer.statusCode()).isEqualTo(201);
        assertThat(exit.get(30, TimeUnit.SECONDS)).as("exit status after SIGTERM").isEqualTo(143);
        JdbcIdempotencyStore records = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(table).build();
        assertThat(records.inspect(IdempotencyKey.of("header:X-Tenant:" + TENANT + "|POST /payments", key))
                .orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void sigtermWithARequestUnansweredPastTheDrainTimeoutAnswersOutcomeUnknownAndKeepsItsKeyInProgress()
            throws Exception {
        Files.writeString(config, Files.readString(config).replace("drain-timeout: 20s", "drain-timeout: 1s"));
        ChildJvm gateway = startGateway();
        GatewayHttp client = new GatewayHttp(port);
        String key = UUID.randomUUID().toString();
        CompletableFuture<HttpResponse<String>> inFlight = heldAtTheUpstream(client, key);

        // The upstream holds its answer past the drain timeout (1s).
        assertThat(gateway.terminate()).as("exit status after SIGTERM").isEqualTo(143);

        // The request was sent: it may have taken effect, so its key is not released, and the client is told so.
        HttpResponse<String> answer = inFlight.get(30, TimeUnit.SECONDS);
        GatewayHttp.assertProblem(answer, 503, "/problems/outcome-unknown");
        assertThat(answer.headers().firstValue("Retry-After")).as("the lease").hasValue("2");
        JdbcIdempotencyStore records = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(table).build();
        IdempotencyKey id = IdempotencyKey.of("header:X-Tenant:" + TENANT + "|POST /payments", key);
        assertThat(records.inspect(id).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);

        // Once its lease has ended (no longer renewed), a retry is sent again, as the next attempt.
        upstream.release(key);
        startGateway();
        AtomicReference<HttpResponse<String>> retried = new AtomicReference<>();
        org.awaitility.Awaitility.await("the retry once the lease ended").atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(200)).until(() -> {
                    HttpResponse<String> r;
                    try {
                        r = client.send(payment(client, key));
                    } catch (IOException e) {
                        return false; // a connection to the stopped gateway, kept by the client: try again
                    }
                    if (r.statusCode() != 201) {
                        GatewayHttp.assertProblem(r, 409, "/problems/request-in-progress");
                        return false;
                    }
                    retried.set(r);
                    return true;
                });
        assertThat(retried.get().body()).contains("\"attempt\":\"2\"");
        assertThat(upstream.calls(key)).isEqualTo(2);
    }

    @Test
    void anUpstreamAnswerManyTimesTheHeapPassesThroughInBoundedMemory() throws Exception {
        startGateway(); // a 256 MB heap (ChildJvm), and max-response-bytes of 1 MiB
        GatewayHttp client = new GatewayHttp(port);
        String key = UUID.randomUUID().toString();
        long size = 600L * 1024 * 1024;

        HttpResponse<java.io.InputStream> r = client.sendForStream(client.post("/payments?big=" + size, null, key,
                "{\"amount\":1}").header("X-Tenant", TENANT));
        long received;
        try (java.io.InputStream body = r.body()) {
            received = body.transferTo(java.io.OutputStream.nullOutputStream());
        }

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(received).isEqualTo(size);
        HttpResponse<String> replay = client.send(client.post("/payments?big=" + size, null, key, "{\"amount\":1}")
                .header("X-Tenant", TENANT));
        assertThat(replay.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Long.toString(size));
        assertThat(upstream.calls(key)).isEqualTo(1);
    }

    /** Sends, on another thread, a payment the upstream holds until the key is released; returns once it is held. */
    private CompletableFuture<HttpResponse<String>> heldAtTheUpstream(GatewayHttp client, String key) {
        CompletableFuture<HttpResponse<String>> answer = CompletableFuture.supplyAsync(() -> {
            try {
                return client.send(payment(client, key));
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        awaitCondition(() -> upstream.calls(key) == 1, Duration.ofSeconds(30), "the request at the upstream");
        return answer;
    }

    private static HttpRequest.Builder payment(GatewayHttp client, String key) {
        return client.post("/payments?block=" + key, null, key, "{\"amount\":1}").header("X-Tenant", TENANT);
    }

    /**
     * The keys whose call, sent through the instance on {@code port}, the upstream began less than 40 ms ago and has not
     * answered: with the upstream's 100 ms delay, each is still unanswered when the instance is killed right after.
     * Calls in flight through another instance would not count: their gateway completes them.
     */
    private int justSentThrough(int port, Map<String, Integer> sentTo) {
        long recent = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(40);
        int n = 0;
        for (Map.Entry<String, List<TestUpstream.Call>> e : upstream.history.entrySet()) {
            List<TestUpstream.Call> calls = e.getValue();
            synchronized (calls) {
                if (calls.isEmpty()) {
                    continue;
                }
                TestUpstream.Call last = calls.get(calls.size() - 1);
                if (last.ended == 0 && last.began > recent && Integer.valueOf(port).equals(sentTo.get(e.getKey()))) {
                    n++;
                }
            }
        }
        return n;
    }

    private static void awaitCondition(java.util.function.BooleanSupplier condition, Duration bound, String what) {
        org.awaitility.Awaitility.await(what).atMost(bound).pollInterval(Duration.ofMillis(10))
                .until(condition::getAsBoolean);
    }
}
