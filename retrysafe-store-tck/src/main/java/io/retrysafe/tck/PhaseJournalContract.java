package io.retrysafe.tck;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhaseStateTooLargeException;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StepCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The contract of a store's {@link PhaseJournal}, and of phased operations on it: a local step's writes and
 * its saved state commit together or not at all, fenced by the owner token; the attempt that takes a key over
 * reads what the earlier one saved in this life of the record, and nothing of an earlier life; the completer
 * finds exactly the operations nobody holds, and drives them forward or to their compensating end.
 *
 * <p>A subclass gives the store, its journal, and a write of the application's own in a step's transaction
 * ({@link #write}, {@link #count}), so that the tests see whether a step's writes committed.
 *
 * @param <C> what the journal's local steps are given to reach their transaction
 */
public abstract class PhaseJournalContract<C> {
    protected static final Duration LONG_LEASE = Duration.ofSeconds(30);
    protected static final Duration LONG_RETENTION = Duration.ofHours(1);
    protected static final Duration SHORT = Duration.ofSeconds(1);
    protected static final Duration AWAIT = Duration.ofSeconds(20);

    private final String scope = "phase-tck-" + UUID.randomUUID();
    private final Fingerprint fingerprint = Fingerprint.sha256("POST /checkouts {\"amount\":100}".getBytes(UTF_8));

    /** The store under test, standalone. */
    protected abstract IdempotencyStore store();

    /** The journal of {@link #store()}. */
    protected abstract PhaseJournal<C> journal();

    /** Writes {@code marker} as the application would, in the step's transaction. */
    protected abstract void write(C transaction, String marker) throws Exception;

    /** How many committed writes of {@code marker} there are. */
    protected abstract long count(String marker);

    // ------------------------------------------------------------------------------------------
    // The journal
    // ------------------------------------------------------------------------------------------

    @Test
    void aStepsWritesAndStateCommitTogetherAndTheNextAttemptReadsTheState() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken first = claimed(key, LONG_LEASE, 1);
        String marker = marker();

        assertCommitted(advance(key, first, "state-1", marker), "a step of the holder");
        assertThat(count(marker)).as("the step's own write, committed with its state").isEqualTo(1);
        assertThat(read(key, first)).as("the holder's read of its state").contains("state-1");
        assertCommitted(store().release(key, first), "release by the holder");

        OwnerToken second = claimed(key, LONG_LEASE, 2);
        assertThat(read(key, second)).as("the state, read by the attempt that took the released key over")
                .contains("state-1");
        assertThat(read(key, first)).as("the released holder's read").isEmpty();
        assertThat(read(key, OwnerToken.random())).as("a stranger's read").isEmpty();
    }

    @Test
    void aStaleOwnersStepIsFencedOffAndItsWritesRollBack() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken stale = claimed(key, SHORT, 1); // its owner then pauses past its lease
        OwnerToken takeover = await().atMost(AWAIT).pollInterval(Duration.ofMillis(50))
                .until(() -> claim(key, LONG_LEASE), Optional::isPresent).orElseThrow();
        String marker = marker();

        FencedWrite late = advance(key, stale, "stale", marker);

        assertThat(late).as("the step of an owner whose key was taken over").isInstanceOf(FencedWrite.LeaseLost.class);
        assertThat(count(marker)).as("the stale step's own write").isZero();
        assertThat(read(key, takeover)).as("the state the new owner reads").isEmpty();
        assertCommitted(advance(key, takeover, "new", marker()), "a step of the new owner");
        assertThat(read(key, takeover)).as("the new owner's state").contains("new");
    }

    @Test
    void aStepThatFailsCommitsNeitherItsWritesNorItsState() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken holder = claimed(key, LONG_LEASE, 1);
        assertCommitted(advance(key, holder, "before", marker()), "a first step");
        String marker = marker();
        IllegalStateException failure = new IllegalStateException("the step's own failure");

        assertThatThrownBy(() -> journal().advance(key, holder, LONG_LEASE, tx -> {
            write(tx, marker);
            throw failure;
        })).as("a step that throws").isSameAs(failure);

        assertThat(count(marker)).as("the failed step's write").isZero();
        assertThat(read(key, holder)).as("the state after a failed step").contains("before");
    }

    @Test
    void aStepWritesNothingOnceTheRecordIsCompleted() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken holder = claimed(key, LONG_LEASE, 1);
        assertCommitted(store().complete(key, holder, StoredResponse.of(201, new byte[0]), LONG_RETENTION), "complete");
        String marker = marker();

        assertThat(advance(key, holder, "after", marker)).as("a step after the completion")
                .isInstanceOf(FencedWrite.LeaseLost.class);
        assertThat(count(marker)).as("its write").isZero();
    }

    @Test
    void aRecordThatExpiredAndWasClaimedAnewHasNoneOfItsEarlierLifesState() throws Exception {
        IdempotencyKey key = newKey();
        OwnerToken old = claimedFor(key, LONG_LEASE, Duration.ofMillis(1500), 1);
        assertCommitted(advance(key, old, "earlier life", marker()), "a step before the record expired");
        assertCommitted(store().release(key, old), "release");
        // Past its expiry the key is absent (a claim before then would take the released record over instead),
        // and the next claim starts a new life, attempt 1.
        await().atMost(AWAIT).pollInterval(Duration.ofMillis(100)).until(() -> store().inspect(key).isEmpty());
        OwnerToken renewed = claimed(key, LONG_LEASE, 1);
        assertCommitted(store().release(key, renewed), "release in the new life");

        OwnerToken next = claimed(key, LONG_LEASE, 2);
        assertThat(read(key, next)).as("the state of an earlier life of the record").isEmpty();
    }

    @Test
    void theCompleterFindsExactlyTheOperationsNobodyHolds() throws Exception {
        IdempotencyKey released = newKey();
        IdempotencyKey leaseEnded = newKey();
        IdempotencyKey held = newKey();
        IdempotencyKey completed = newKey();
        IdempotencyKey noSteps = newKey();
        OwnerToken r = claimed(released, LONG_LEASE, 1);
        assertCommitted(advance(released, r, "s", marker()), "step");
        assertCommitted(store().release(released, r), "release");
        OwnerToken l = claimed(leaseEnded, LONG_LEASE, 1);
        assertCommitted(journal().advance(leaseEnded, l, SHORT, tx -> "s".getBytes(UTF_8)), "step with a short lease");
        OwnerToken h = claimed(held, LONG_LEASE, 1);
        assertCommitted(advance(held, h, "s", marker()), "step");
        OwnerToken c = claimed(completed, LONG_LEASE, 1);
        assertCommitted(advance(completed, c, "s", marker()), "step");
        assertCommitted(store().complete(completed, c, StoredResponse.of(200, new byte[0]), LONG_RETENTION), "complete");
        OwnerToken n = claimed(noSteps, LONG_LEASE, 1);
        assertCommitted(store().release(noSteps, n), "release");

        await().atMost(AWAIT).untilAsserted(() -> assertThat(abandonedHere(Duration.ZERO))
                .as("operations of this test nobody holds").containsExactlyInAnyOrder(released, leaseEnded));
        assertThat(journal().countAbandoned(Duration.ZERO)).as("the backlog counts them").isGreaterThanOrEqualTo(2);
        assertThat(abandonedHere(Duration.ofHours(1))).as("none was left untouched for an hour").isEmpty();
        assertThat(journal().abandoned(Duration.ZERO, 1)).as("the limit").hasSize(1);
    }

    @Test
    void exclusiveWorkRunsOnOneCallerAtATime() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        String name = "tck-" + UUID.randomUUID().toString().substring(0, 8);
        Thread first = new Thread(() -> journal().exclusively(name, () -> {
            inside.countDown();
            try {
                return leave.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }));
        first.start();
        try {
            assertThat(inside.await(30, TimeUnit.SECONDS)).as("the first caller entered").isTrue();
            assertThat(journal().exclusively(name, () -> "second")).as("a second caller while the first runs").isEmpty();
        } finally {
            leave.countDown();
            first.join(30_000);
        }
        assertThat(journal().exclusively(name, () -> "second")).as("a caller after the first left").contains("second");
    }

    @Test
    void aTakeoverRacingTheStaleOwnersStepSeesItsStateIfAndOnlyIfItsWritesCommitted() throws Exception {
        int keys = 16;
        List<Callable<Boolean>> tasks = new ArrayList<>();
        List<String> verdicts = new CopyOnWriteArrayList<>();
        for (int i = 0; i < keys; i++) {
            IdempotencyKey key = newKey();
            OwnerToken stale = claimed(key, Duration.ofMillis(200), 1);
            String marker = marker();
            // A step that commits renews the lease only briefly, so that the takeover comes soon after it.
            tasks.add(() -> journal().advance(key, stale, Duration.ofMillis(200), tx -> {
                write(tx, marker);
                return "stale".getBytes(UTF_8);
            }) instanceof FencedWrite.Committed);
            tasks.add(() -> {
                OwnerToken takeover = await().atMost(AWAIT).pollInterval(Duration.ofMillis(20))
                        .until(() -> claim(key, LONG_LEASE), Optional::isPresent).orElseThrow();
                boolean sawState = read(key, takeover).isPresent();
                verdicts.add(key.value() + ": state seen " + sawState + ", write committed " + (count(marker) == 1));
                return sawState == (count(marker) == 1);
            });
        }
        // Claimed last with the same lease: once it can be taken over, every lease above has ended.
        IdempotencyKey probe = newKey();
        claimed(probe, Duration.ofMillis(200), 1);
        await().atMost(AWAIT).pollInterval(Duration.ofMillis(20)).until(() -> claim(probe, LONG_LEASE), Optional::isPresent);
        List<Boolean> results = Concurrently.run("stale steps racing takeovers", Duration.ofSeconds(90), tasks);
        for (int i = 1; i < results.size(); i += 2) {
            assertThat(results.get(i)).as("the takeover saw the stale step's state exactly when its write committed: %s",
                    verdicts).isTrue();
        }
    }

    // ------------------------------------------------------------------------------------------
    // Phased operations on the journal
    // ------------------------------------------------------------------------------------------

    private final AtomicInteger charges = new AtomicInteger();
    private final List<String> derivedKeys = new CopyOnWriteArrayList<>();

    /** reserve (local) → charge (foreign) → book (local), counting what ran. */
    private PhasedOperation<String, String, C> checkout(String name, Callable<Boolean> failBook) {
        return PhasedOperation.of(name, StepCodec.utf8(), ResponseCodec.utf8(), (order, phases) -> {
            String hold = phases.local("reserve", StepCodec.utf8(), tx -> {
                write(tx, order + ":reserve");
                return "hold-" + order;
            });
            String charge = phases.foreign("charge", StepCodec.utf8(), derived -> {
                derivedKeys.add(derived);
                charges.incrementAndGet();
                return "charge-" + derived.substring(0, 8);
            });
            return phases.local("book", StepCodec.utf8(), tx -> {
                if (failBook.call()) {
                    throw new IllegalStateException("booking failed");
                }
                write(tx, order + ":book");
                return "booked " + hold + " " + charge;
            });
        });
    }

    private PhasedRetrySafe<C> phased(Duration lease) {
        RetrySafe engine = RetrySafe.builder(store()).name("tck")
                .policy(OperationPolicy.custom().leaseTtl(lease).retention(LONG_RETENTION).build()).build();
        return PhasedRetrySafe.builder(engine, journal()).build();
    }

    @Test
    void aResumedOperationSkipsItsSavedStepsAndCallsOutAgainWithTheSameDerivedKey() {
        PhasedRetrySafe<C> phased = phased(LONG_LEASE);
        AtomicInteger bookings = new AtomicInteger();
        PhasedOperation<String, String, C> checkout = checkout("checkout", () -> bookings.incrementAndGet() == 1);
        IdempotencyKey key = newKey();
        String order = marker();

        assertThatThrownBy(() -> phased.execute(key, fingerprint, checkout, order))
                .as("the first attempt, whose booking fails").hasMessageContaining("booking failed");
        Outcome<String> retry = phased.execute(key, fingerprint, checkout, order);
        Outcome<String> again = phased.execute(key, fingerprint, checkout, order);

        assertThat(retry).as("the retry").isInstanceOf(Outcome.Executed.class);
        assertThat(retry.orThrow()).startsWith("booked hold-" + order + " charge-");
        assertThat(again).as("the retry after it").isInstanceOf(Outcome.Replayed.class);
        assertThat(again.orThrow()).isEqualTo(retry.orThrow());
        assertThat(count(order + ":reserve")).as("reservations (saved by the first attempt)").isEqualTo(1);
        assertThat(count(order + ":book")).as("bookings").isEqualTo(1);
        assertThat(charges.get()).as("calls out: the booking that would have saved the charge rolled back").isEqualTo(2);
        assertThat(Set.copyOf(derivedKeys)).as("the derived key, the same on both calls").hasSize(1);
        assertThat(derivedKeys.get(0)).as("a derived key").matches("[0-9a-f]{64}");
    }

    @Test
    void aSavedForeignValueIsHandedBackWithoutCallingOutAgain() {
        PhasedRetrySafe<C> phased = phased(LONG_LEASE);
        IdempotencyKey key = newKey();
        AtomicInteger runs = new AtomicInteger();
        PhasedOperation<String, String, C> operation = PhasedOperation.of("three-steps", StepCodec.utf8(),
                ResponseCodec.utf8(), (order, phases) -> {
                    phases.local("reserve", StepCodec.none(), tx -> null);
                    String charge = phases.foreign("charge", StepCodec.utf8(), derived -> {
                        charges.incrementAndGet();
                        return "charge-" + charges.get();
                    });
                    phases.local("note", StepCodec.none(), tx -> null); // saves the charge
                    if (runs.incrementAndGet() == 1) {
                        throw new IllegalStateException("dies after the charge was saved");
                    }
                    return charge + " at " + phases.recoveryPoint().orElseThrow();
                });

        assertThatThrownBy(() -> phased.execute(key, fingerprint, operation, "o")).hasMessageContaining("dies after");
        Outcome<String> retry = phased.execute(key, fingerprint, operation, "o");

        assertThat(retry.orThrow()).as("the retry's answer, from the saved charge").isEqualTo("charge-1 at note");
        assertThat(charges.get()).as("calls out").isEqualTo(1);
    }

    @Test
    void stepsThatBreakTheRulesAreRefusedAndCommitNothing() {
        PhasedRetrySafe<C> phased = PhasedRetrySafe.builder(phased(LONG_LEASE).engine(), journal()).maxSavedBytes(256)
                .build();
        String marker = marker();
        PhasedOperation<String, String, C> callsOutFirst = PhasedOperation.of("calls-out-first", StepCodec.utf8(),
                ResponseCodec.utf8(), (order, phases) -> phases.foreign("charge", StepCodec.utf8(), k -> "x"));
        PhasedOperation<String, String, C> twice = PhasedOperation.of("twice", StepCodec.utf8(), ResponseCodec.utf8(),
                (order, phases) -> {
                    phases.local("step", StepCodec.none(), tx -> null);
                    return phases.local("step", StepCodec.utf8(), tx -> "again");
                });
        PhasedOperation<String, String, C> large = PhasedOperation.of("large", StepCodec.utf8(), ResponseCodec.utf8(),
                (order, phases) -> phases.local("big", StepCodec.utf8(), tx -> {
                    write(tx, marker);
                    return "x".repeat(1000);
                }));

        assertThatThrownBy(() -> phased.execute(newKey(), fingerprint, callsOutFirst, "o"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("first step is local");
        assertThatThrownBy(() -> phased.execute(newKey(), fingerprint, twice, "o"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name of its own");
        assertThatThrownBy(() -> phased.execute(newKey(), fingerprint, large, "o"))
                .isInstanceOf(PhaseStateTooLargeException.class).hasMessageContaining("at most 256");
        assertThat(count(marker)).as("the write of the step whose values were too large").isZero();
    }

    @Test
    void aKeyWhoseStepsAnotherOperationSavedIsNotResumedByThisOne() {
        PhasedRetrySafe<C> phased = phased(LONG_LEASE);
        IdempotencyKey key = newKey();
        PhasedOperation<String, String, C> first = PhasedOperation.of("first", StepCodec.utf8(), ResponseCodec.utf8(),
                (order, phases) -> {
                    phases.local("reserve", StepCodec.none(), tx -> null);
                    throw new IllegalStateException("released after its first step");
                });
        PhasedOperation<String, String, C> other = PhasedOperation.of("other", StepCodec.utf8(), ResponseCodec.utf8(),
                (order, phases) -> "other ran");
        assertThatThrownBy(() -> phased.execute(key, fingerprint, first, "o")).hasMessageContaining("released after");

        assertThatThrownBy(() -> phased.execute(key, fingerprint, other, "o"))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("operation first, not of other");
    }

    @Test
    void theCompleterDrivesAnOperationWhoseOwnerWentSilentForwardAndRetriesReplayItsAnswer() throws Exception {
        PhasedRetrySafe<C> phased = phased(SHORT);
        String order = marker();
        AtomicInteger attempts = new AtomicInteger();
        PhasedOperation<String, String, C> checkout = PhasedOperation.of("checkout-" + order, StepCodec.utf8(),
                ResponseCodec.utf8(), (input, phases) -> {
                    phases.local("reserve", StepCodec.none(), tx -> {
                        write(tx, input + ":reserve");
                        return null;
                    });
                    if (attempts.incrementAndGet() == 1) {
                        // The first owner never hears back from the provider, and is not retried.
                        throw new OutcomeUnknownException("provider", SHORT, "no answer", null);
                    }
                    return phases.local("book", StepCodec.utf8(), tx -> {
                        write(tx, input + ":book");
                        return "booked " + input;
                    });
                });
        IdempotencyKey key = newKey();
        assertThatThrownBy(() -> phased.execute(key, fingerprint, checkout, order))
                .isInstanceOf(OutcomeUnknownException.class);
        PhaseCompleter<C> completer = phased.completer().register(checkout).idleFor(Duration.ZERO).batchSize(1000).build();

        await().atMost(AWAIT).pollInterval(Duration.ofMillis(200)).until(() -> completer.runOnce().forwarded() >= 1
                || count(order + ":book") == 1);

        assertThat(count(order + ":reserve")).as("reservations").isEqualTo(1);
        assertThat(count(order + ":book")).as("bookings, by the completer").isEqualTo(1);
        Outcome<String> late = phased.execute(key, fingerprint, checkout, order);
        assertThat(late).as("the client's late retry").isInstanceOf(Outcome.Replayed.class);
        assertThat(late.orThrow()).isEqualTo("booked " + order);
    }

    @Test
    void theCompleterRunsTheCompensationWhenForwardFailsAndStoresItsAnswer() throws Exception {
        PhasedRetrySafe<C> phased = phased(LONG_LEASE);
        String order = marker();
        PhasedOperation<String, String, C> checkout = PhasedOperation.<String, String, C>of("refunding-" + order,
                StepCodec.utf8(), ResponseCodec.utf8(), (input, phases) -> {
                    phases.local("reserve", StepCodec.none(), tx -> {
                        write(tx, input + ":reserve");
                        return null;
                    });
                    throw new IllegalStateException("the provider refuses, every time");
                }).withCompensation((input, phases) -> phases.local("cancel", StepCodec.utf8(), tx -> {
                    write(tx, input + ":cancel");
                    return "cancelled " + input;
                }));
        IdempotencyKey key = newKey();
        assertThatThrownBy(() -> phased.execute(key, fingerprint, checkout, order)).hasMessageContaining("refuses");
        PhaseCompleter<C> completer = phased.completer().register(checkout).idleFor(Duration.ZERO).batchSize(1000).build();

        await().atMost(AWAIT).pollInterval(Duration.ofMillis(200)).until(() -> completer.runOnce().compensated() >= 1
                || count(order + ":cancel") == 1);

        assertThat(count(order + ":cancel")).as("cancellations").isEqualTo(1);
        assertThat(count(order + ":reserve")).as("reservations: the compensation resumed from the saved step")
                .isEqualTo(1);
        assertThat(phased.execute(key, fingerprint, checkout, order).orThrow()).as("a late retry's answer")
                .isEqualTo("cancelled " + order);
        assertThat(abandonedHere(Duration.ZERO)).as("abandoned operations left").doesNotContain(key);
    }

    // ------------------------------------------------------------------------------------------
    // Helpers
    // ------------------------------------------------------------------------------------------

    protected final IdempotencyKey newKey() {
        return IdempotencyKey.of(scope, "key-" + UUID.randomUUID());
    }

    private static String marker() {
        return "m-" + UUID.randomUUID();
    }

    private List<IdempotencyKey> abandonedHere(Duration idleFor) {
        return journal().abandoned(idleFor, 100_000).stream().map(PhaseJournal.Abandoned::key)
                .filter(k -> k.scope().equals(scope)).collect(Collectors.toList());
    }

    private ClaimResult.Claimed claimAttempt(IdempotencyKey key, Duration lease, Duration retention) {
        ClaimResult result = store().tryClaim(new ClaimRequest(key, fingerprint, OwnerToken.random(), lease, retention));
        return result instanceof ClaimResult.Claimed claimed ? claimed : null;
    }

    private Optional<OwnerToken> claim(IdempotencyKey key, Duration lease) {
        return Optional.ofNullable(claimAttempt(key, lease, LONG_RETENTION)).map(ClaimResult.Claimed::token);
    }

    private OwnerToken claimed(IdempotencyKey key, Duration lease, int attempt) {
        return claimedFor(key, lease, LONG_RETENTION, attempt);
    }

    private OwnerToken claimedFor(IdempotencyKey key, Duration lease, Duration retention, int attempt) {
        ClaimResult.Claimed claimed = claimAttempt(key, lease, retention);
        assertThat(claimed).as("claim of key %s", key.value()).isNotNull();
        assertThat(claimed.attempt()).as("attempt of the claim of key %s", key.value()).isEqualTo(attempt);
        return claimed.token();
    }

    private FencedWrite advance(IdempotencyKey key, OwnerToken token, String state, String marker) throws Exception {
        return journal().advance(key, token, LONG_LEASE, tx -> {
            write(tx, marker);
            return state.getBytes(UTF_8);
        });
    }

    private Optional<String> read(IdempotencyKey key, OwnerToken token) {
        return journal().read(key, token).map(b -> new String(b, UTF_8));
    }

    private static void assertCommitted(FencedWrite write, String what) {
        assertThat(write).as(what).isInstanceOf(FencedWrite.Committed.class);
    }
}
