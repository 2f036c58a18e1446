package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The non-blocking engine on {@link RedisIdempotencyStore#async()}, end to end on Lettuce's event
 * loop with BlockHound watching: the store's stages complete there (or on the thread that chains a
 * stage already done, such as the connect thread on first use), and the engine decides, runs the
 * operation, writes its outcome and schedules its waits from there. A blocking call on the event loop
 * fails the request with {@code BlockingOperationError}.
 */
class RedisNonBlockingEngineIT {
    private static final Duration BOUND = Duration.ofSeconds(60);

    static {
        NonBlocking.install();
    }

    @RegisterExtension
    static final StandaloneRedis redis = new StandaloneRedis(Duration.ofSeconds(10));

    @Test
    void manyDuplicatesOnTheEventLoopRunTheOperationOnceAndWaitWithoutBlocking() throws Exception {
        Queue<Throwable> storeErrors = new ConcurrentLinkedQueue<>();
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(redis.store.async())
                .policy(OperationPolicy.custom().waitForResult(BOUND).build())
                .listener(new RetrySafeListener() {
                    @Override
                    public void onStoreError(String storeName, String operation, RuntimeException error) {
                        storeErrors.add(error);
                    }
                }).build();
        IdempotencyKey key = IdempotencyKey.of("nb-" + UUID.randomUUID(), "charge-1");
        Fingerprint request = Fingerprint.sha256("POST /charges 5".getBytes(UTF_8));
        AtomicInteger runs = new AtomicInteger();
        ExecutorService callers = Executors.newFixedThreadPool(8);
        try (StatefulRedisConnection<String, String> payments = redis.client.connect()) {
            List<CompletableFuture<Outcome<String>>> outcomes = IntStream.range(0, 24)
                    .mapToObj(i -> CompletableFuture.supplyAsync(() -> retrySafe.execute(key, request,
                            ResponseCodec.utf8(), attempt -> {
                                runs.incrementAndGet();
                                // A call that the server holds for 300 ms, so that the duplicates find
                                // the key in flight and wait; it completes on the event loop.
                                return payments.async().blpop(0.3, redis.prefix + "never-pushed")
                                        .thenApply(nothing -> "charged");
                            }), callers).thenCompose(stage -> stage))
                    .toList();
            CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new))
                    .get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

            List<Outcome<String>> done = outcomes.stream().map(CompletableFuture::join).toList();
            assertThat(done).filteredOn(Outcome.Executed.class::isInstance).hasSize(1);
            assertThat(done).filteredOn(o -> !(o instanceof Outcome.Executed)).hasSize(23)
                    .allMatch(o -> o.equals(new Outcome.Replayed<>("charged")));
        } finally {
            callers.shutdownNow();
        }
        assertThat(runs).hasValue(1);
        assertThat(storeErrors).isEmpty();
    }
}
