package io.retrysafe.r2dbc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.pool.PoolMetrics;
import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.internal.Engines;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The asynchronous engine's in-process gate in front of transactional mode on PostgreSQL over R2DBC,
 * with BlockHound watching (installed by {@link R2dbcDatabase}): concurrent duplicates of a request in
 * flight on this instance take no connection and make no claim while it runs, on a pool of their
 * own whose metrics show it, and then each replays its answer.
 */
class OncePerInstanceIT {
    private static final String PAYMENTS = "rs_r2dbc_gate_payments";
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final int DUPLICATES = 64;
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments 100".getBytes(UTF_8));

    private static ConnectionPool pool;
    private static R2dbcIdempotencyStore store;

    @BeforeAll
    static void createTables() throws Exception {
        pool = new ConnectionPool(ConnectionPoolConfiguration.builder(R2dbcDatabase.unpooled())
                .initialSize(0).maxSize(4).build());
        // The duplicates' wait in memory is the lock timeout: long enough here for the first's cold start.
        store = R2dbcIdempotencyStore.builder(pool).table(R2dbcTransactionalIT.TABLE).lockTimeout(BOUND).build();
        get(store.createSchema());
        get(onConnection(c -> Mono.from(c.createStatement("CREATE TABLE IF NOT EXISTS " + PAYMENTS
                + " (id varchar(255) PRIMARY KEY, amount integer NOT NULL)").execute())
                .flatMap(result -> Mono.from(result.getRowsUpdated())).then().toFuture()));
    }

    @AfterAll
    static void closePool() {
        pool.dispose();
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** {@code work} on a connection of this test's pool, given back however it ends. */
    private static <T> CompletableFuture<T> onConnection(Function<Connection, CompletionStage<T>> work) {
        return Mono.usingWhen(pool.create(), c -> Mono.fromCompletionStage(() -> work.apply(c)), Connection::close)
                .toFuture();
    }

    @Test
    void sixtyFourDuplicatesInFlightHoldNoConnectionMakeOneClaimAndRunTheOperationOnce() throws Exception {
        Queue<String> claims = new ConcurrentLinkedQueue<>();
        Queue<Throwable> storeErrors = new ConcurrentLinkedQueue<>();
        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).listener(new RetrySafeListener() {
            @Override
            public void onStoreLatency(String storeName, String operation, long nanos) {
                if (operation.equals("claim")) {
                    claims.add(Thread.currentThread().getName());
                }
            }

            @Override
            public void onStoreError(String storeName, String operation, RuntimeException error) {
                storeErrors.add(error);
            }
        }).build();
        TransactionalR2dbcRetrySafe payments = TransactionalR2dbcRetrySafe.of(engine);
        IdempotencyKey key = IdempotencyKey.of("gate-" + UUID.randomUUID(), "order-1");
        AtomicInteger runs = new AtomicInteger();
        CompletableFuture<Void> release = new CompletableFuture<>();

        List<CompletableFuture<Outcome<String>>> outcomes = IntStream.range(0, DUPLICATES)
                .mapToObj(i -> Mono.defer(() -> Mono.fromCompletionStage(payments.oncePerInstance(key, REQUEST,
                                () -> onConnection(c -> payments.execute(c, key, REQUEST, ResponseCodec.utf8(),
                                        attempt -> {
                                            runs.incrementAndGet();
                                            return Mono.from(c.createStatement("INSERT INTO " + PAYMENTS
                                                                    + " (id, amount) VALUES ($1, 100)")
                                                            .bind("$1", key.scope()).execute())
                                                    .flatMap(result -> Mono.from(result.getRowsUpdated()))
                                                    .then(Mono.fromFuture(release))
                                                    .thenReturn("charged " + key.scope()).toFuture();
                                        })))))
                        .subscribeOn(Schedulers.parallel())
                        .toFuture())
                .toList();
        await().atMost(BOUND).until(() -> runs.get() == 1 && Engines.inFlight(engine).waiting() == DUPLICATES - 1);

        PoolMetrics metrics = pool.getMetrics().orElseThrow();
        assertThat(metrics.acquiredSize()).as("only the first holds a connection").isEqualTo(1);
        assertThat(metrics.pendingAcquireSize()).isZero();
        assertThat(outcomes).noneMatch(CompletableFuture::isDone);

        release.complete(null);
        CompletableFuture.allOf(outcomes.toArray(CompletableFuture[]::new)).get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

        List<Outcome<String>> done = outcomes.stream().map(CompletableFuture::join).toList();
        assertThat(done).filteredOn(o -> o instanceof Outcome.Executed).hasSize(1);
        assertThat(done).filteredOn(o -> !(o instanceof Outcome.Executed)).hasSize(DUPLICATES - 1)
                .allMatch(o -> o.equals(new Outcome.Replayed<>("charged " + key.scope())));
        assertThat(runs).hasValue(1);
        CompletableFuture<Long> rows = onConnection(c -> Flux.from(c.createStatement("SELECT count(*) FROM " + PAYMENTS
                        + " WHERE id = $1").bind("$1", key.scope()).execute())
                .concatMap(result -> result.map(row -> row.get(0, Long.class))).next().toFuture());
        assertThat(get(rows)).as("one operation's write").isEqualTo(1L);
        IdempotencyRecord record = get(store.inspect(key)).orElseThrow();
        assertThat(record.attempt()).as("one claim took the key").isEqualTo(1);
        assertThat(record.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(claims).as("each request claimed once, the duplicates after the first committed")
                .hasSize(DUPLICATES);
        assertThat(storeErrors).isEmpty();
        assertThat(Engines.inFlight(engine).size()).isZero();
        assertThat(Engines.inFlight(engine).waiting()).isZero();
    }
}
