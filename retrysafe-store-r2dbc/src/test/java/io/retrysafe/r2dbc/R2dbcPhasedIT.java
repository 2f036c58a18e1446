package io.retrysafe.r2dbc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncPhaseCompleter;
import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.RetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StepCodec;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.TestDatabases;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link AsyncPhasedRetrySafe} on the R2DBC store, end to end: steps written as stages, their writes on the
 * step's connection, resumed from what an earlier attempt saved (of either face, on either store), and the
 * completer driving what nobody retried.
 */
class R2dbcPhasedIT {
    private static final Duration LONG = Duration.ofSeconds(30);
    private static final Duration SHORT = Duration.ofSeconds(1);
    private static R2dbcIdempotencyStore store;
    private static R2dbcPhaseJournal journal;

    private final String scope = "phased-" + UUID.randomUUID();
    private final Fingerprint request = Fingerprint.sha256("POST /checkouts 100".getBytes(UTF_8));
    private final AtomicInteger charges = new AtomicInteger();
    private final List<String> derivedKeys = new CopyOnWriteArrayList<>();
    private final List<PhaseCompleter.Run> runs = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void createTables() throws Exception {
        store = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table("rs_r2dbc_phased_it").build();
        store.createSchema().toCompletableFuture().get(30, TimeUnit.SECONDS);
        PhaseWrites.createTable();
        journal = R2dbcPhaseJournal.of(store);
    }

    private AsyncPhasedRetrySafe<Connection> phased(Duration lease) {
        AsyncRetrySafe engine = AsyncRetrySafe.builder(store).name("phased-it")
                .policy(OperationPolicy.custom().leaseTtl(lease).retention(Duration.ofHours(1)).build())
                .listener(new RetrySafeListener() {
                    @Override
                    public void onCompleterRun(PhaseCompleter.Run run) {
                        runs.add(run);
                    }
                }).build();
        return AsyncPhasedRetrySafe.builder(engine, journal).build();
    }

    /** reserve (local) → charge (foreign) → book (local); the first {@code failingBookings} bookings fail. */
    private AsyncPhasedOperation<String, String, Connection> checkout(String name, AtomicInteger bookings,
            int failingBookings) {
        return AsyncPhasedOperation.of(name, StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> phases
                .local("reserve", StepCodec.utf8(), c -> PhaseWrites.insert(c, order + ":reserve")
                        .thenReturn("hold-" + order).toFuture())
                .thenCompose(hold -> phases.foreign("charge", StepCodec.utf8(), derived -> {
                    derivedKeys.add(derived);
                    charges.incrementAndGet();
                    return CompletableFuture.completedFuture("charge-" + derived.substring(0, 8));
                }).thenCompose(charge -> phases.local("book", StepCodec.utf8(), c -> {
                    if (bookings.incrementAndGet() <= failingBookings) {
                        return CompletableFuture.failedFuture(new IllegalStateException("booking failed"));
                    }
                    return PhaseWrites.insert(c, order + ":book").thenReturn("booked " + hold + " " + charge).toFuture();
                }))));
    }

    @Test
    void aRetryResumesFromTheSavedStepsAndCallsOutAgainWithTheSameDerivedKey() throws Exception {
        AsyncPhasedRetrySafe<Connection> phased = phased(LONG);
        AsyncPhasedOperation<String, String, Connection> checkout = checkout("checkout", new AtomicInteger(), 1);
        IdempotencyKey key = newKey();
        String order = marker();

        assertThatThrownBy(() -> get(phased.execute(key, request, checkout, order)))
                .as("the first attempt, whose booking fails").hasRootCauseMessage("booking failed");
        Outcome<String> retry = get(phased.execute(key, request, checkout, order));
        Outcome<String> again = get(phased.execute(key, request, checkout, order));

        assertThat(retry).as("the retry").isInstanceOf(Outcome.Executed.class);
        assertThat(retry.orThrow()).startsWith("booked hold-" + order + " charge-");
        assertThat(again).as("the retry after it").isEqualTo(new Outcome.Replayed<>(retry.orThrow()));
        assertThat(PhaseWrites.count(order + ":reserve")).as("reservations, saved by the first attempt").isEqualTo(1);
        assertThat(PhaseWrites.count(order + ":book")).as("bookings").isEqualTo(1);
        assertThat(charges).as("calls out: the booking that would have saved the charge rolled back").hasValue(2);
        assertThat(Set.copyOf(derivedKeys)).as("the derived key, the same on both calls").hasSize(1);
        assertThat(derivedKeys.get(0)).matches("[0-9a-f]{64}");
    }

    @Test
    void stepsThatBreakTheRulesFailTheirStage() {
        AsyncPhasedRetrySafe<Connection> phased = phased(LONG);
        AsyncPhasedOperation<String, String, Connection> callsOutFirst = AsyncPhasedOperation.of("calls-out-first",
                StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> phases.foreign("charge", StepCodec.utf8(),
                        k -> CompletableFuture.completedFuture("x")));
        AsyncPhasedOperation<String, String, Connection> twice = AsyncPhasedOperation.of("twice", StepCodec.utf8(),
                ResponseCodec.utf8(), (order, phases) -> phases.local("step", StepCodec.none(),
                                c -> CompletableFuture.<Void>completedFuture(null))
                        .thenCompose(none -> phases.local("step", StepCodec.utf8(),
                                c -> CompletableFuture.completedFuture("again"))));

        assertThatThrownBy(() -> get(phased.execute(newKey(), request, callsOutFirst, "o")))
                .hasRootCauseInstanceOf(IllegalStateException.class).hasMessageContaining("first step is local");
        assertThatThrownBy(() -> get(phased.execute(newKey(), request, twice, "o")))
                .hasRootCauseInstanceOf(IllegalArgumentException.class).hasMessageContaining("name of its own");
    }

    @Test
    void theBuilderRefusesWhatTheBlockingFaceRefuses() {
        AsyncRetrySafe failOpen = AsyncRetrySafe.builder(store).failOpen(true).build();

        assertThatThrownBy(() -> AsyncPhasedRetrySafe.builder(failOpen, journal).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot fail open");
        assertThatThrownBy(() -> AsyncPhasedRetrySafe.builder(AsyncRetrySafe.builder(store).build(), journal)
                .maxSavedBytes(100)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was 100");
    }

    @Test
    void theCompleterDrivesAnOperationWhoseOwnerWentSilentForwardAndRetriesReplayItsAnswer() throws Exception {
        AsyncPhasedRetrySafe<Connection> phased = phased(SHORT);
        String order = marker();
        AtomicInteger attempts = new AtomicInteger();
        AsyncPhasedOperation<String, String, Connection> checkout = AsyncPhasedOperation.of("checkout-" + order,
                StepCodec.utf8(), ResponseCodec.utf8(), (input, phases) -> phases
                        .local("reserve", StepCodec.none(), c -> PhaseWrites.insert(c, input + ":reserve").toFuture())
                        .thenCompose(none -> attempts.incrementAndGet() == 1
                                // The first owner never hears back from the provider, and is not retried.
                                ? CompletableFuture.failedFuture(new OutcomeUnknownException("provider", SHORT,
                                        "no answer", null))
                                : phases.local("book", StepCodec.utf8(), c -> PhaseWrites.insert(c, input + ":book")
                                        .thenReturn("booked " + input).toFuture())));
        IdempotencyKey key = newKey();
        assertThatThrownBy(() -> get(phased.execute(key, request, checkout, order)))
                .hasCauseInstanceOf(OutcomeUnknownException.class);
        AsyncPhaseCompleter<Connection> completer = phased.completer().register(checkout).idleFor(Duration.ZERO)
                .batchSize(1000).build();

        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
                .until(() -> get(completer.runOnce()).forwarded() >= 1 || PhaseWrites.count(order + ":book") == 1);

        assertThat(PhaseWrites.count(order + ":reserve")).as("reservations").isEqualTo(1);
        assertThat(PhaseWrites.count(order + ":book")).as("bookings, by the completer").isEqualTo(1);
        assertThat(runs).as("the runs, reported to the engine's listener").isNotEmpty()
                .anyMatch(run -> run.ran() && run.forwarded() >= 1);
        Outcome<String> late = get(phased.execute(key, request, checkout, order));
        assertThat(late).as("the client's late retry").isEqualTo(new Outcome.Replayed<>("booked " + order));
    }

    @Test
    void theCompleterRunsTheCompensationWhenForwardFailsAndStoresItsAnswer() throws Exception {
        AsyncPhasedRetrySafe<Connection> phased = phased(LONG);
        String order = marker();
        AsyncPhasedOperation<String, String, Connection> checkout = AsyncPhasedOperation.<String, String, Connection>of(
                "refunding-" + order, StepCodec.utf8(), ResponseCodec.utf8(), (input, phases) -> phases
                        .local("reserve", StepCodec.none(), c -> PhaseWrites.insert(c, input + ":reserve").toFuture())
                        .thenCompose(none -> CompletableFuture.<String>failedFuture(
                                new IllegalStateException("the provider refuses, every time"))))
                .withCompensation((input, phases) -> phases.local("cancel", StepCodec.utf8(),
                        c -> PhaseWrites.insert(c, input + ":cancel").thenReturn("cancelled " + input).toFuture()));
        IdempotencyKey key = newKey();
        assertThatThrownBy(() -> get(phased.execute(key, request, checkout, order))).hasRootCauseMessage(
                "the provider refuses, every time");
        AsyncPhaseCompleter<Connection> completer = phased.completer().register(checkout).idleFor(Duration.ZERO)
                .batchSize(1000).build();

        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
                .until(() -> get(completer.runOnce()).compensated() >= 1 || PhaseWrites.count(order + ":cancel") == 1);

        assertThat(PhaseWrites.count(order + ":cancel")).as("cancellations").isEqualTo(1);
        assertThat(PhaseWrites.count(order + ":reserve")).as("reservations: the compensation resumed from the saved step")
                .isEqualTo(1);
        assertThat(get(phased.execute(key, request, checkout, order)).orThrow()).as("a late retry's answer")
                .isEqualTo("cancelled " + order);
        assertThat(get(journal.abandoned(Duration.ZERO, 100_000))).as("abandoned operations left")
                .noneMatch(abandoned -> abandoned.key().equals(key));
    }

    @Test
    void anOperationTheBlockingFaceBeganOnTheJdbcStoreIsResumedByThisOneWithTheSameDerivedKey() throws Exception {
        JdbcPhaseJournal jdbc = JdbcPhaseJournal.of(JdbcIdempotencyStore.builder(TestDatabases.postgres())
                .dialect(JdbcDialect.POSTGRESQL).table(store.table()).build());
        PhasedRetrySafe<java.sql.Connection> blocking = PhasedRetrySafe.builder(RetrySafe.builder(jdbc.store())
                .policy(OperationPolicy.custom().leaseTtl(LONG).retention(Duration.ofHours(1)).build()).build(),
                jdbc).build();
        String order = marker();
        PhasedOperation<String, String, java.sql.Connection> begun = PhasedOperation.of("checkout", StepCodec.utf8(),
                ResponseCodec.utf8(), (input, phases) -> {
                    String hold = phases.local("reserve", StepCodec.utf8(), c -> {
                        try (PreparedStatement ps = c.prepareStatement(
                                "INSERT INTO " + PhaseWrites.TABLE + " (marker) VALUES (?)")) {
                            ps.setString(1, input + ":reserve");
                            ps.executeUpdate();
                        }
                        return "hold-" + input;
                    });
                    phases.foreign("charge", StepCodec.utf8(), derived -> {
                        derivedKeys.add(derived);
                        return "charge-" + derived.substring(0, 8);
                    });
                    throw new IllegalStateException("the blocking service stops before booking " + hold);
                });
        IdempotencyKey key = newKey();
        assertThatThrownBy(() -> blocking.execute(key, request, begun, order)).hasMessageContaining("stops before");

        Outcome<String> resumed = get(phased(LONG).execute(key, request, checkout("checkout", new AtomicInteger(), 0),
                order));

        assertThat(resumed.orThrow()).as("the answer, from the blocking face's saved reservation")
                .startsWith("booked hold-" + order + " charge-");
        assertThat(PhaseWrites.count(order + ":reserve")).as("reservations").isEqualTo(1);
        assertThat(derivedKeys).as("the derived key of the charge, on either face").hasSize(2)
                .containsOnly(derivedKeys.get(0));
    }

    @Test
    void theCompletersOfBothStoresTakeOneLockPerTable() throws Exception {
        JdbcPhaseJournal jdbc = JdbcPhaseJournal.of(JdbcIdempotencyStore.builder(TestDatabases.postgres())
                .dialect(JdbcDialect.POSTGRESQL).table(store.table()).build());
        String name = "lock-" + UUID.randomUUID();

        Optional<Optional<String>> whileHeld = jdbc.exclusively(name, () -> {
            try {
                return get(journal.exclusively(name, () -> CompletableFuture.completedFuture("r2dbc")));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        assertThat(whileHeld).as("the R2DBC journal's attempt while the JDBC journal holds the lock")
                .contains(Optional.empty());
        assertThat(get(journal.exclusively(name, () -> CompletableFuture.completedFuture("r2dbc"))))
                .as("once it is given back").contains("r2dbc");
    }

    private IdempotencyKey newKey() {
        return IdempotencyKey.of(scope, "key-" + UUID.randomUUID());
    }

    private static String marker() {
        return "m-" + UUID.randomUUID();
    }

    private static <T> T get(CompletionStage<T> stage) throws ExecutionException, InterruptedException,
            java.util.concurrent.TimeoutException {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
}
