package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.TransactionalR2dbcRetrySafe;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
import org.springframework.transaction.reactive.TransactionSynchronizationManager;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * Transactional mode's executor on PostgreSQL over R2DBC, below HTTP: what it answers when no
 * transaction can begin and past the lock timeout, in which Reactor context the handler runs, and
 * which transaction managers it accepts.
 */
class R2dbcTransactionalExecutorIT {
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("{}".getBytes(UTF_8));
    private static R2dbcIdempotencyStore store;

    @BeforeAll
    static void createTable() throws Exception {
        store = R2dbcIdempotencyStore.builder(TestDatabase.pool()).table("retrysafe_webflux_tx")
                .lockTimeout(Duration.ofMillis(200)).build();
        store.createSchema().toCompletableFuture().get(30, SECONDS);
    }

    private static R2dbcTransactionalExecutor executor(R2dbcIdempotencyStore on, ConnectionFactory connections) {
        return new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(AsyncRetrySafe.builder(on).build()),
                connections, new R2dbcTransactionManager(connections));
    }

    private static IdempotencyKey newKey() {
        return KeyRules.DEFAULT.key("executor-it", UUID.randomUUID().toString());
    }

    private static StoredResponse created() {
        return StoredResponse.of(201, Map.of(), "done".getBytes(UTF_8));
    }

    /** A first request whose handler has claimed {@code key} and runs, in its transaction, until released. */
    private static CompletableFuture<Outcome<StoredResponse>> holding(R2dbcTransactionalExecutor executor,
            IdempotencyKey key, CompletableFuture<Void> release) throws InterruptedException {
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Outcome<StoredResponse>> first = executor.execute(null, key, FINGERPRINT, null,
                Mono.defer(() -> {
                    started.countDown();
                    return Mono.fromFuture(release, true).thenReturn(created());
                })).toFuture();
        assertThat(started.await(BOUND.toSeconds(), SECONDS)).as("the first request runs").isTrue();
        return first;
    }

    @Test
    void withoutATransactionTheStoreIsUnavailableAndTheHandlerDoesNotRun() {
        ConnectionFactory nowhere = ConnectionFactories.get("r2dbc:postgresql://postgres@127.0.0.1:1/nowhere");
        AtomicBoolean ran = new AtomicBoolean();

        Outcome<StoredResponse> outcome = executor(R2dbcIdempotencyStore.builder(nowhere).build(), nowhere)
                .execute(null, newKey(), FINGERPRINT, null, Mono.fromSupplier(() -> {
                    ran.set(true);
                    return created();
                }))
                .block(BOUND);

        assertThat(outcome).isInstanceOfSatisfying(Outcome.StoreUnavailable.class,
                unavailable -> assertThat(unavailable.failure()).hasMessageContaining("could not begin"));
        assertThat(ran).isFalse();
    }

    @Test
    void aDuplicatePastTheLockTimeoutIsInProgress() throws Exception {
        R2dbcTransactionalExecutor executor = executor(store, TestDatabase.pool());
        IdempotencyKey key = newKey();
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<Outcome<StoredResponse>> first = holding(executor, key, release);

        Outcome<StoredResponse> duplicate = executor.execute(null, key, FINGERPRINT, null,
                Mono.error(new AssertionError("a duplicate must not run"))).block(BOUND);
        release.complete(null);

        assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
        assertThat(first.get(BOUND.toSeconds(), SECONDS)).isInstanceOf(Outcome.Executed.class);
        assertThat(executor.execute(null, key, FINGERPRINT, null, Mono.error(new AssertionError("no second run")))
                .block(BOUND)).isInstanceOf(Outcome.Replayed.class);
    }

    @Test
    void aRouteThatWaitsForTheResultClaimsAgainPastTheLockTimeoutAndReplays() throws Exception {
        AtomicInteger claims = new AtomicInteger();
        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).listener(new RetrySafeListener() {
            @Override
            public void onStoreLatency(String storeName, String operation, long nanos) {
                if (operation.equals("claim")) {
                    claims.incrementAndGet();
                }
            }
        }).build();
        R2dbcTransactionalExecutor executor = new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(engine),
                TestDatabase.pool(), new R2dbcTransactionManager(TestDatabase.pool()));
        IdempotencyKey key = newKey();
        CompletableFuture<Void> release = new CompletableFuture<>();
        CompletableFuture<Outcome<StoredResponse>> first = holding(executor, key, release);

        CompletableFuture<Outcome<StoredResponse>> waiting = executor.execute(null, key, FINGERPRINT,
                OperationPolicy.custom().waitForResult(BOUND).build(),
                Mono.error(new AssertionError("a duplicate must not run"))).toFuture();
        // The first claim, the duplicate's, and one more after its claim met the lock timeout.
        await().atMost(BOUND).until(() -> claims.get() >= 3);
        release.complete(null);

        assertThat(first.get(BOUND.toSeconds(), SECONDS)).isInstanceOf(Outcome.Executed.class);
        assertThat(waiting.get(BOUND.toSeconds(), SECONDS)).isInstanceOfSatisfying(Outcome.Replayed.class,
                replayed -> assertThat(((StoredResponse) replayed.value()).body()).isEqualTo("done".getBytes(UTF_8)));
    }

    @Test
    void theHandlerRunsInTheTransactionAndInTheCallersContext() {
        List<Object> seen = new CopyOnWriteArrayList<>();

        Outcome<StoredResponse> outcome = executor(store, TestDatabase.pool())
                .execute(null, newKey(), FINGERPRINT, null, TransactionSynchronizationManager.forCurrentTransaction()
                        .flatMap(tx -> Mono.deferContextual(context -> {
                            seen.add(tx.isActualTransactionActive());
                            seen.add(context.get("caller"));
                            return Mono.just(created());
                        })))
                .contextWrite(Context.of("caller", "alice"))
                .block(BOUND);

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(seen).containsExactly(true, "alice");
    }

    @Test
    void theTransactionManagerMustManageTheHandlersConnectionFactory() {
        ConnectionFactory other = ConnectionFactories.get("r2dbc:postgresql://postgres@127.0.0.1:1/other");

        assertThatThrownBy(() -> new R2dbcTransactionalExecutor(
                TransactionalR2dbcRetrySafe.of(AsyncRetrySafe.builder(store).build()), TestDatabase.pool(),
                new R2dbcTransactionManager(other)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must manage the connection factory");
    }
}
