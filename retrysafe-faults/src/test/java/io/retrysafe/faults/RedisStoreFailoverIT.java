package io.retrysafe.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.testservices.TestRedis;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Redis store (standalone mode) on a master with two replicas under three Sentinels, under retrying clients
 * with duplicates in flight, while every 6 to 12 s the master dies with its replicas 0.2 to 1.5 s behind and the
 * Sentinels promote one of them. Redis replicates asynchronously: the promoted replica lacks the claims and
 * completions the master acknowledged in that time. With {@code waitForReplicas(1, …)} (the default here) a claim
 * runs only once a replica has it, and a completion is answered once a replica has it or is counted as
 * unacknowledged: the run must show no more intents run twice, or answered twice differently, than completions
 * counted so.
 * {@code -Dretrysafe.faults.redis-wait=0} runs without it, to measure what a failover loses: it reports and does not
 * fail. At the end, every answered intent is sent once more, as a client that lost its answer would: it must be
 * replayed.
 */
class RedisStoreFailoverIT {
    private static final int CLIENTS = 12;
    private static final double DUPLICATE_RATE = 0.1;
    private static final Duration LEASE = Duration.ofSeconds(6);
    private static final Duration REPLICA_TIMEOUT = Duration.ofMillis(500);
    private static final Duration RECOVERY = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    /** One intent: its key, every value a call of it answered, and whether a call of it ended in an unknown outcome. */
    private record Intent(IdempotencyKey key, List<String> answers, AtomicBoolean unknown) {
        Intent(IdempotencyKey key) {
            this(key, new CopyOnWriteArrayList<>(), new AtomicBoolean());
        }
    }

    @Test
    void everyAnsweredIntentOutlivesFailoversOfTheRedisStore() throws Exception {
        int wait = Integer.parseInt(FaultInjectionIT.property("retrysafe.faults.redis-wait", "1"));
        int failovers = Integer.parseInt(FaultInjectionIT.property("retrysafe.faults.failovers", "3"));
        long seed = new SecureRandom().nextLong();
        Random rng = new Random(seed);
        say("Redis store failover: seed " + seed + ", waitForReplicas " + wait + ", " + failovers + " failovers");
        /* Every run of an operation, by key: more than one is a second effect. */
        Map<IdempotencyKey, List<String>> runs = new ConcurrentHashMap<>();
        List<Intent> intents = new CopyOnWriteArrayList<>();
        long unacknowledged;
        try (TestRedis.Replicated redis = TestRedis.startReplicated(dir, 2, 3, "records",
                FaultInjectionIT.SENTINEL_DOWN_AFTER)) {
            RedisClient client = RedisClient.create(redis.uri());
            RedisIdempotencyStore.Builder builder = RedisIdempotencyStore.builder(client);
            if (wait > 0) {
                builder.waitForReplicas(wait, REPLICA_TIMEOUT);
            }
            RedisIdempotencyStore store = builder.build();
            // Completions written again for about 6 s, longer than a failover takes, before an outcome is unknown.
            RetrySafe engine = RetrySafe.builder(store).policy(OperationPolicy.custom().leaseTtl(LEASE).build())
                    .completionAttempts(6).completionBackoff(Duration.ofMillis(200)).build();
            ExecutorService clients = Executors.newFixedThreadPool(CLIENTS * 2);
            AtomicBoolean stop = new AtomicBoolean();
            try {
                List<Future<?>> running = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    running.add(clients.submit(() -> {
                        while (!stop.get()) {
                            Intent intent = new Intent(IdempotencyKey.of("failover", UUID.randomUUID().toString()));
                            intents.add(intent);
                            Future<?> duplicate = ThreadLocalRandom.current().nextDouble() < DUPLICATE_RATE
                                    ? clients.submit(() -> answer(engine, intent, runs)) : null;
                            answer(engine, intent, runs);
                            if (duplicate != null) {
                                duplicate.get();
                            }
                        }
                        return null;
                    }));
                }
                long start = System.nanoTime();
                for (int i = 0; i < failovers; i++) {
                    Thread.sleep(6_000 + rng.nextInt(6_000)); // the schedule itself, not a wait for a condition
                    Duration behind = Duration.ofMillis(200 + rng.nextInt(1_300));
                    int promoted = redis.failover(behind);
                    say(String.format("t=%6.1fs REDIS_FAILOVER       replicas %d ms behind; master now on port %d",
                            (System.nanoTime() - start) / 1e9, behind.toMillis(), promoted));
                }
                stop.set(true);
                for (Future<?> f : running) {
                    f.get(RECOVERY.toSeconds(), TimeUnit.SECONDS);
                }
                // A client that lost its answer sends the intent again: the stored answer must come back.
                for (Intent intent : intents) {
                    answer(engine, intent, runs);
                }
            } finally {
                stop.set(true);
                clients.shutdownNow();
                unacknowledged = store.unacknowledgedCompletions();
                store.close();
                client.shutdown();
            }
        }

        long executions = runs.values().stream().mapToLong(List::size).sum();
        List<String> ranAgain = new ArrayList<>();
        List<String> ranAgainAfterUnknown = new ArrayList<>();
        List<String> answeredTwice = new ArrayList<>();
        for (Intent intent : intents) {
            List<String> ran = runs.getOrDefault(intent.key(), List.of());
            if (ran.size() > 1) {
                (intent.unknown().get() ? ranAgainAfterUnknown : ranAgain).add(intent.key().digest() + " " + ran);
            }
            if (intent.answers().stream().distinct().count() > 1) {
                answeredTwice.add(intent.key().digest() + " " + intent.answers());
            }
        }
        StringBuilder b = new StringBuilder("\n[faults] ---- Redis store failover summary ----\n");
        b.append("[faults] waitForReplicas: ").append(wait).append(", failovers: ").append(failovers).append('\n');
        b.append("[faults] intents: ").append(intents.size()).append(", operations run: ").append(executions)
                .append(", completions no replica acknowledged: ").append(unacknowledged).append('\n');
        b.append("[faults] intents run more than once: ").append(ranAgain.size()).append(' ')
                .append(head(ranAgain)).append('\n');
        b.append("[faults] intents run again after an unknown outcome (standalone mode's window): ")
                .append(ranAgainAfterUnknown.size()).append('\n');
        b.append("[faults] intents answered with two different values: ").append(answeredTwice.size()).append(' ')
                .append(head(answeredTwice)).append('\n');
        System.out.println(b);
        assertThat(intents).as("intents").hasSizeGreaterThan(CLIENTS);
        if (wait > 0) {
            // A claim runs only once a replica has it; a completion no replica acknowledged in time is the one
            // write a failover can still lose, and the store counts each.
            assertThat((long) ranAgain.size()).as("intents run more than once (seed " + seed + ")")
                    .isLessThanOrEqualTo(unacknowledged);
            assertThat((long) answeredTwice.size()).as("intents answered differently (seed " + seed + ")")
                    .isLessThanOrEqualTo(unacknowledged);
        }
    }

    /**
     * Sends {@code intent} until it is answered, as a retrying client does: again after a {@code 503} or an intent
     * still in progress, after a short pause. Its operation records each run and answers a value of its own.
     */
    private static Void answer(RetrySafe engine, Intent intent, Map<IdempotencyKey, List<String>> runs)
            throws InterruptedException {
        Fingerprint fingerprint = Fingerprint.sha256(intent.key().toString().getBytes(StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + RECOVERY.toNanos();
        Object last = null; // what the last try got, for the failure's message
        while (System.nanoTime() < deadline) {
            try {
                Outcome<String> outcome = engine.execute(intent.key(), fingerprint, ResponseCodec.utf8(), attempt -> {
                    String run = UUID.randomUUID().toString();
                    runs.computeIfAbsent(intent.key(), k -> new CopyOnWriteArrayList<>()).add(run);
                    Thread.sleep(ThreadLocalRandom.current().nextInt(20)); // the operation's own work
                    return run;
                });
                if (outcome instanceof Outcome.Executed<String> executed) {
                    intent.answers().add(executed.value());
                    return null;
                }
                if (outcome instanceof Outcome.Replayed<String> replayed) {
                    intent.answers().add(replayed.value());
                    return null;
                }
                last = outcome; // in progress, store unavailable: try again
            } catch (OutcomeUnknownException e) {
                intent.unknown().set(true);
                last = e;
            } catch (StoreUnavailableException e) {
                last = e; // refused or unreachable: not run; try again
            }
            Thread.sleep(50 + ThreadLocalRandom.current().nextInt(150));
        }
        throw new IllegalStateException("intent " + intent.key().digest() + " not answered within " + RECOVERY
                + "; the last try got " + last);
    }

    private static String head(List<String> items) {
        return items.size() <= 5 ? items.toString() : items.subList(0, 5) + " …";
    }

    private static void say(String line) {
        System.out.println("[faults] " + line);
    }
}
