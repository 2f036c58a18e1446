package io.retrysafe.r2dbc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.IsolationLevel;
import io.r2dbc.spi.Result;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Attempt;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Transactional mode over R2DBC on PostgreSQL: the handler's R2DBC write, the key and the stored
 * response commit together or roll back together, and a duplicate waits in the database (holding
 * no thread) for the first to commit. What was committed is read back through JDBC, as another
 * service on the same table would see it.
 */
class R2dbcTransactionalIT {
    static final String TABLE = "rs_r2dbc_tx_it";
    static final String PAYMENTS = "rs_r2dbc_tx_payments";
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments 100".getBytes(UTF_8));

    private static R2dbcIdempotencyStore store;
    private static JdbcIdempotencyStore jdbc;
    private static DataSource dataSource;

    private final IdempotencyKey key = IdempotencyKey.of("tx-" + UUID.randomUUID(), "order-1");
    private final AtomicInteger runs = new AtomicInteger();

    @BeforeAll
    static void createTables() throws Exception {
        store = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table(TABLE).build();
        get(store.createSchema());
        dataSource = TestDatabases.postgres();
        jdbc = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(TABLE).build();
        try (java.sql.Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + PAYMENTS + " (id varchar(255) PRIMARY KEY, amount integer NOT NULL)");
        }
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** {@code work} on a connection of the pool, given back however it ends. */
    private static <T> CompletableFuture<T> onConnection(Function<Connection, CompletionStage<T>> work) {
        return Mono.usingWhen(R2dbcDatabase.pool().create(), c -> Mono.fromCompletionStage(() -> work.apply(c)),
                Connection::close).toFuture();
    }

    /**
     * {@code work} on a connection of the pool whose transactions run at {@code level} (a session setting),
     * given back at the pool's READ COMMITTED.
     */
    private static <T> CompletableFuture<T> onConnection(String level, Function<Connection, CompletionStage<T>> work) {
        return Mono.usingWhen(R2dbcDatabase.pool().create(),
                c -> Mono.from(c.setTransactionIsolationLevel(IsolationLevel.valueOf(level)))
                        .then(Mono.fromCompletionStage(() -> work.apply(c))),
                c -> Mono.from(c.setTransactionIsolationLevel(IsolationLevel.READ_COMMITTED)).then(Mono.from(c.close())))
                .toFuture();
    }

    private static TransactionalR2dbcRetrySafe mode(R2dbcIdempotencyStore on) {
        return TransactionalR2dbcRetrySafe.of(AsyncRetrySafe.builder(on).build());
    }

    /** The handler's write: a payment row, on the request's connection. */
    private CompletionStage<String> pay(Connection c, String id) {
        runs.incrementAndGet();
        return Flux.from(c.createStatement("INSERT INTO " + PAYMENTS + " (id, amount) VALUES ($1, 100)")
                        .bind("$1", id).execute())
                .concatMap(Result::getRowsUpdated)
                .then(Mono.just("paid " + id))
                .toFuture();
    }

    private String paymentId() {
        return key.scope() + "-payment";
    }

    private static int payments(String id) throws SQLException {
        try (java.sql.Connection c = dataSource.getConnection();
                java.sql.PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + PAYMENTS + " WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    @Test
    void theHandlersWriteTheKeyAndTheResponseCommitTogether() throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);

        Outcome<String> first = get(onConnection(c -> payments.execute(c, key, REQUEST, ResponseCodec.utf8(),
                attempt -> pay(c, paymentId()))));
        Outcome<String> retry = get(onConnection(c -> payments.execute(c, key, REQUEST, ResponseCodec.utf8(),
                attempt -> pay(c, paymentId() + "-again"))));

        assertThat(first).isEqualTo(new Outcome.Executed<>("paid " + paymentId(), new Attempt(key, 1),
                Outcome.Completion.STORED));
        assertThat(retry).isEqualTo(new Outcome.Replayed<>("paid " + paymentId()));
        assertThat(runs).hasValue(1);
        assertThat(payments(paymentId())).isEqualTo(1);
        assertThat(jdbc.inspect(key)).as("the record, read by the JDBC store").get()
                .satisfies(r -> {
                    assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
                    assertThat(r.response().orElseThrow().body()).isEqualTo(("paid " + paymentId()).getBytes(UTF_8));
                });
    }

    @Test
    void aHandlerThatFailsAfterItsWriteRollsBackTheWriteAndTheKey() throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);
        IllegalStateException declined = new IllegalStateException("card declined");

        CompletableFuture<Outcome<String>> failed = onConnection(c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId()).thenCompose(paid -> CompletableFuture.failedFuture(declined))));

        assertThatThrownBy(() -> get(failed)).isInstanceOf(ExecutionException.class).rootCause().isSameAs(declined);
        assertThat(payments(paymentId())).as("the handler's write").isZero();
        assertThat(jdbc.inspect(key)).as("the key").isEmpty();
        Outcome<String> retry = get(onConnection(c -> payments.execute(c, key, REQUEST, ResponseCodec.utf8(),
                attempt -> pay(c, paymentId()))));
        assertThat(retry).isEqualTo(new Outcome.Executed<>("paid " + paymentId(), new Attempt(key, 1),
                Outcome.Completion.STORED));
        assertThat(payments(paymentId())).isEqualTo(1);
    }

    @Test
    void aServerErrorRollsBackTheWriteAndFreesTheKey() throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);

        Outcome<StoredResponse> outcome = get(onConnection(c -> payments.execute(c, key, REQUEST,
                ResponseCodec.identity(), attempt -> pay(c, paymentId())
                        .thenApply(paid -> StoredResponse.of(503, "try later".getBytes(UTF_8))))));

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<StoredResponse>) outcome).completion()).isEqualTo(Outcome.Completion.RELEASED);
        assertThat(payments(paymentId())).isZero();
        assertThat(jdbc.inspect(key)).isEmpty();
    }

    @Test
    void aDuplicateWaitsInTheDatabaseForTheFirstToCommitThenReplays() throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);
        CompletableFuture<String> gate = new CompletableFuture<>();
        CompletableFuture<Outcome<String>> first = onConnection(c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId()).thenCompose(paid -> gate)));
        await().atMost(BOUND).until(() -> runs.get() == 1);

        CompletableFuture<Outcome<String>> duplicate = onConnection(c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId() + "-duplicate")));
        await().atMost(BOUND).until(() -> claimsWaitingOnALock() > 0);
        assertThat(duplicate).as("the duplicate, while the first has not committed").isNotDone();
        gate.complete("paid " + paymentId());

        assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
        assertThat(get(duplicate)).isEqualTo(new Outcome.Replayed<>("paid " + paymentId()));
        assertThat(runs).hasValue(1);
        assertThat(payments(paymentId() + "-duplicate")).isZero();
    }

    @Test
    void aDuplicateStillWaitingAtTheLockTimeoutIsInProgressAndWritesNothing() throws Exception {
        R2dbcIdempotencyStore impatient = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table(TABLE)
                .lockTimeout(Duration.ofMillis(300)).build();
        TransactionalR2dbcRetrySafe payments = mode(store);
        CompletableFuture<String> gate = new CompletableFuture<>();
        CompletableFuture<Outcome<String>> first = onConnection(c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId()).thenCompose(paid -> gate)));
        await().atMost(BOUND).until(() -> runs.get() == 1);

        Outcome<String> duplicate = get(onConnection(c -> mode(impatient).execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId() + "-duplicate"))));
        gate.complete("paid " + paymentId());

        assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
        assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
        assertThat(runs).hasValue(1);
        assertThat(jdbc.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void joinedToTheCallersTransactionTheKeyCommitsWithTheCallersWrites() throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);

        TransactionalR2dbcRetrySafe.Joined<String> joined = get(onConnection(c -> Mono.from(c.beginTransaction())
                .then(Mono.fromCompletionStage(() -> pay(c, paymentId() + "-before")))
                .then(Mono.fromCompletionStage(() -> payments.join(c, key, REQUEST, ResponseCodec.utf8(),
                        attempt -> pay(c, paymentId()))))
                .flatMap(j -> Mono.from(j.commit() ? c.commitTransaction() : c.rollbackTransaction()).thenReturn(j))
                .toFuture()));

        assertThat(joined.commit()).isTrue();
        assertThat(payments(paymentId() + "-before")).isEqualTo(1);
        assertThat(payments(paymentId())).isEqualTo(1);
        assertThat(jdbc.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);

        // A retry joined to another transaction replays; its claim is undone, and the caller's earlier
        // write is still in its transaction, which the database did not abort.
        int[] earlierWriteSeen = {-1};
        TransactionalR2dbcRetrySafe.Joined<String> replay = get(onConnection(c -> Mono.from(c.beginTransaction())
                .then(Mono.fromCompletionStage(() -> pay(c, paymentId() + "-other")))
                .then(Mono.fromCompletionStage(() -> payments.join(c, key, REQUEST, ResponseCodec.utf8(),
                        attempt -> pay(c, paymentId() + "-must-not-run"))))
                .flatMap(j -> Flux.from(c.createStatement("SELECT count(*) FROM " + PAYMENTS + " WHERE id = $1")
                                .bind("$1", paymentId() + "-other").execute())
                        .concatMap(r -> r.map(row -> row.get(0, Long.class)))
                        .next()
                        .doOnNext(n -> earlierWriteSeen[0] = n.intValue())
                        .then(Mono.from(c.rollbackTransaction()))
                        .thenReturn(j))
                .toFuture()));

        assertThat(replay.commit()).isFalse();
        assertThat(replay.outcome()).isEqualTo(new Outcome.Replayed<>("paid " + paymentId()));
        assertThat(earlierWriteSeen[0]).as("the caller's write before the claim, inside its transaction").isEqualTo(1);
        assertThat(payments(paymentId() + "-must-not-run")).isZero();
    }

    /** Sessions of this database waiting on a lock while claiming a key of the test's table. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"REPEATABLE READ", "SERIALIZABLE"})
    void atAStricterIsolationLevelADuplicateThatWaitedForTheFirstReplaysIt(String level) throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);
        CompletableFuture<String> gate = new CompletableFuture<>();
        CompletableFuture<Outcome<String>> first = onConnection(level, c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId()).thenCompose(paid -> gate)));
        await().atMost(BOUND).until(() -> runs.get() == 1);

        // Its snapshot predates the first's record: PostgreSQL refuses the claim once the first commits.
        CompletableFuture<Outcome<String>> duplicate = onConnection(level, c -> payments.execute(c, key, REQUEST,
                ResponseCodec.utf8(), attempt -> pay(c, paymentId() + "-duplicate")));
        await().atMost(BOUND).until(() -> claimsWaitingOnALock() > 0);
        gate.complete("paid " + paymentId());

        assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
        assertThat(get(duplicate)).isEqualTo(new Outcome.Replayed<>("paid " + paymentId()));
        assertThat(runs).hasValue(1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"REPEATABLE READ", "SERIALIZABLE"})
    void atAStricterIsolationLevelAJoinedClaimOlderThanTheRecordIsInProgressAndItsRetryReplays(String level)
            throws Exception {
        TransactionalR2dbcRetrySafe payments = mode(store);
        AtomicReference<Outcome<String>> first = new AtomicReference<>();
        TransactionalR2dbcRetrySafe.Joined<String> joined = get(onConnection(level, c -> Mono.from(c.beginTransaction())
                // The caller's transaction takes its snapshot, then another request pays under the key.
                .then(Flux.from(c.createStatement("SELECT 1").execute()).concatMap(r -> r.map(row -> 1)).then())
                .then(Mono.fromCompletionStage(() -> onConnection(other -> payments.execute(other, key, REQUEST,
                        ResponseCodec.utf8(), attempt -> pay(other, paymentId())))))
                .doOnNext(first::set)
                .then(Mono.fromCompletionStage(() -> payments.join(c, key, REQUEST, ResponseCodec.utf8(),
                        attempt -> pay(c, paymentId() + "-joined"))))
                .flatMap(j -> Mono.from(c.rollbackTransaction()).thenReturn(j))
                .toFuture()));

        assertThat(first.get()).isInstanceOf(Outcome.Executed.class);
        assertThat(joined.outcome()).as("a claim whose snapshot cannot see the record").isInstanceOf(
                Outcome.InProgress.class);
        assertThat(joined.commit()).isFalse();
        Outcome<String> retry = get(onConnection(level, c -> payments.execute(c, key, REQUEST, ResponseCodec.utf8(),
                attempt -> pay(c, paymentId() + "-retry"))));
        assertThat(retry).isEqualTo(new Outcome.Replayed<>("paid " + paymentId()));
        assertThat(runs).hasValue(1);
    }

    private static int claimsWaitingOnALock() throws SQLException {
        try (java.sql.Connection c = dataSource.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        + " AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO " + TABLE + " %'")) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
