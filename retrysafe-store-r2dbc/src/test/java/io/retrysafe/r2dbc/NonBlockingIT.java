package io.retrysafe.r2dbc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Result;
import io.retrysafe.AsyncPhaseCompleter;
import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The engine on the R2DBC store, end to end on the driver's event loop, with BlockHound watching (phased
 * operations and their completer too):
 * the store's stages complete on Netty threads, and the engine decides, runs the operation, writes
 * its outcome and schedules its waits from there. A blocking call anywhere on that path would fail
 * the request with {@link BlockingOperationError}; the first tests prove that BlockHound is on.
 */
class NonBlockingIT {
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static R2dbcIdempotencyStore store;

    @BeforeAll
    static void createTable() throws Exception {
        store = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table(R2dbcStandaloneContractIT.TABLE).build();
        store.createSchema().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    @Test
    void blockHoundCatchesASleepOnAReactorThread() {
        Mono<Long> sleeper = Mono.delay(Duration.ofMillis(1)).doOnNext(tick -> sleep());

        assertThatThrownBy(() -> sleeper.block(BOUND)).hasCauseInstanceOf(BlockingOperationError.class);
    }

    @Test
    void blockHoundCatchesASleepOnTheDriversEventLoop() {
        // BlockHound lets blocking calls through inside some of Netty's own frames, and once in many runs a
        // row was mapped under one. Each missed sleep prints where it ran, and a new connection tries
        // again: with BlockHound off, every attempt misses.
        List<String> missed = new ArrayList<>();
        for (int attempt = 0; attempt < 3; attempt++) {
            String miss = sleepWhileMappingARow();
            if (miss == null) {
                return;
            }
            missed.add(miss);
            System.err.println("a sleep passed on the driver's event loop, at:" + miss);
        }
        throw new AssertionError("three sleeps on the driver's event loop passed BlockHound, at: " + missed);
    }

    /** Null when BlockHound caught the sleep; otherwise the mapping thread's name and stack. */
    private static String sleepWhileMappingARow() {
        // What the row mapper met is recorded where it happens: the driver may pass the error on or,
        // when it arrives as the connection closes, drop it, so the query's end proves nothing.
        AtomicReference<String> mappedOn = new AtomicReference<>();
        AtomicReference<Throwable> sleepFailed = new AtomicReference<>();
        AtomicReference<String> passedAt = new AtomicReference<>();
        Mono<Integer> sleeper = Mono.usingWhen(R2dbcDatabase.unpooled().create(),
                c -> Flux.from(c.createStatement("SELECT 1").execute())
                        .concatMap(result -> result.map(row -> {
                            mappedOn.set(Thread.currentThread().getName());
                            try {
                                sleep();
                            } catch (Error e) {
                                sleepFailed.set(e);
                                throw e;
                            }
                            passedAt.set(Arrays.stream(Thread.currentThread().getStackTrace())
                                    .map(frame -> "\n\t" + frame).collect(Collectors.joining()));
                            return row.get(0, Integer.class);
                        }))
                        .next(),
                Connection::close);

        AtomicReference<Throwable> ended = new AtomicReference<>();
        sleeper.onErrorResume(e -> {
            ended.set(e);
            return Mono.empty();
        }).block(BOUND);

        assertThat(mappedOn.get()).as("where the row was mapped; the query ended with %s", ended.get())
                .startsWith("reactor-tcp");
        if (sleepFailed.get() != null) {
            assertThat(sleepFailed.get()).isInstanceOf(BlockingOperationError.class);
            return null;
        }
        return mappedOn.get() + passedAt.get();
    }

    @Test
    void manyDuplicatesOnTheEventLoopRunTheOperationOnceAndWaitWithoutBlocking() throws Exception {
        Queue<String> threads = new ConcurrentLinkedQueue<>();
        Queue<Throwable> listenerSaw = new ConcurrentLinkedQueue<>();
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store)
                .policy(OperationPolicy.custom().waitForResult(BOUND).build())
                .listener(new RetrySafeListener() {
                    @Override
                    public void onStoreError(String storeName, String operation, RuntimeException error) {
                        listenerSaw.add(error);
                    }
                }).build();
        IdempotencyKey key = IdempotencyKey.of("nb-" + UUID.randomUUID(), "charge-1");
        Fingerprint request = Fingerprint.sha256("POST /charges 5".getBytes(UTF_8));
        AtomicInteger runs = new AtomicInteger();

        List<CompletableFuture<Outcome<String>>> outcomes = IntStream.range(0, 24)
                .mapToObj(i -> Mono.defer(() -> Mono.fromCompletionStage(retrySafe.execute(key, request,
                                ResponseCodec.utf8(), attempt -> {
                                    runs.incrementAndGet();
                                    threads.add(Thread.currentThread().getName());
                                    // Slow enough that the duplicates find the key in flight and wait.
                                    return Mono.delay(Duration.ofMillis(300)).then(query())
                                            .map(n -> "charged " + n).toFuture();
                                })))
                        .subscribeOn(Schedulers.parallel())
                        .toFuture())
                .toList();
        CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new)).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

        List<Outcome<String>> done = outcomes.stream().map(CompletableFuture::join).toList();
        assertThat(done).filteredOn(o -> o instanceof Outcome.Executed).hasSize(1);
        assertThat(done).filteredOn(o -> !(o instanceof Outcome.Executed)).hasSize(23)
                .allMatch(o -> o.equals(new Outcome.Replayed<>("charged 1")));
        assertThat(runs).hasValue(1);
        // Where the claim's stage completed: the driver's event loop, or, when the claim had completed
        // before the engine chained on it, the caller's Reactor thread. BlockHound watches both.
        assertThat(threads).as("the operation ran on a non-blocking thread")
                .allMatch(name -> name.startsWith("reactor-tcp") || name.startsWith("parallel-"));
        assertThat(listenerSaw).isEmpty();
    }

    @Test
    void phasedOperationsAndTheirCompleterGoOnFromTheEventLoopWithoutBlocking() throws Exception {
        PhaseWrites.createTable();
        Queue<String> threads = new ConcurrentLinkedQueue<>();
        Queue<Throwable> listenerSaw = new ConcurrentLinkedQueue<>();
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store).listener(new RetrySafeListener() {
            @Override
            public void onStoreError(String storeName, String operation, RuntimeException error) {
                listenerSaw.add(error);
            }
        }).build();
        AsyncPhasedRetrySafe<Connection> phased = AsyncPhasedRetrySafe.builder(retrySafe, R2dbcPhaseJournal.of(store))
                .build();
        String scope = "nb-phased-" + UUID.randomUUID();
        AtomicInteger failures = new AtomicInteger();
        AsyncPhasedOperation<String, String, Connection> checkout = AsyncPhasedOperation.of("nb-checkout-" + scope,
                StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> phases
                        .local("reserve", StepCodec.none(), c -> {
                            threads.add(Thread.currentThread().getName());
                            return PhaseWrites.insert(c, order + ":reserve").toFuture();
                        })
                        .thenCompose(none -> phases.foreign("charge", StepCodec.utf8(), derived -> Mono
                                .delay(Duration.ofMillis(50)).thenReturn("charge-" + derived.substring(0, 8)).toFuture()))
                        .thenCompose(charge -> phases.local("book", StepCodec.utf8(), c -> {
                            threads.add(Thread.currentThread().getName());
                            if (order.endsWith("-fails-once") && failures.getAndIncrement() == 0) {
                                return CompletableFuture.failedFuture(new IllegalStateException("booking failed"));
                            }
                            return PhaseWrites.insert(c, order + ":book").thenReturn(charge).toFuture();
                        })));

        List<CompletableFuture<Outcome<String>>> outcomes = IntStream.range(0, 8)
                .mapToObj(i -> Mono.defer(() -> Mono.fromCompletionStage(phased.execute(IdempotencyKey.of(scope,
                                "order-" + i), Fingerprint.sha256(("order " + i).getBytes(UTF_8)), checkout,
                                scope + "-" + i)))
                        .subscribeOn(Schedulers.parallel())
                        .toFuture())
                .toList();
        CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new)).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
        // One left for the completer, which ends it from the event loop too.
        IdempotencyKey left = IdempotencyKey.of(scope, "left");
        assertThatThrownBy(() -> Mono.defer(() -> Mono.fromCompletionStage(phased.execute(left, Fingerprint.sha256(
                        "left".getBytes(UTF_8)), checkout, scope + "-fails-once")))
                .subscribeOn(Schedulers.parallel()).block(BOUND)).hasMessageContaining("booking failed");
        AsyncPhaseCompleter<Connection> completer = phased.completer().register(checkout).idleFor(Duration.ZERO)
                .batchSize(1000).build();
        PhaseCompleter.Run run = Mono.defer(() -> Mono.fromCompletionStage(completer.runOnce()))
                .subscribeOn(Schedulers.parallel()).block(BOUND);

        assertThat(outcomes).allMatch(o -> o.join() instanceof Outcome.Executed);
        assertThat(run.forwarded()).as("the completer's run: %s", run).isGreaterThanOrEqualTo(1);
        assertThat(PhaseWrites.count(scope + "-fails-once:book")).as("the completer's booking").isEqualTo(1);
        assertThat(threads).as("the steps ran on non-blocking threads")
                .allMatch(name -> name.startsWith("reactor-tcp") || name.startsWith("parallel-"));
        assertThat(listenerSaw).isEmpty();
    }

    private static Mono<Long> query() {
        return Mono.usingWhen(R2dbcDatabase.pool().create(), c -> Flux.from(c.createStatement("SELECT 1::bigint").execute())
                .concatMap(result -> result.map(row -> row.get(0, Long.class))).next(), Connection::close);
    }

    private static void sleep() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
