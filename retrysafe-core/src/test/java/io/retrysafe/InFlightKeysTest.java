package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.internal.InFlightKeys.Admission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InFlightKeysTest {
    private static final Fingerprint REQUEST = Fingerprint.sha256("request".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("other".getBytes(UTF_8));

    private final InFlightKeys keys = new InFlightKeys(EngineCore.TIMER);
    private final IdempotencyKey key = IdempotencyKey.of("alice|POST /payments", "k-1");

    @Test
    void theFirstRequestHoldsTheKeyUntilClosedAndASecondCloseDoesNothing() {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);

        assertThat(first).isInstanceOf(Admission.Entered.class);
        assertThat(keys.admit(key, REQUEST, Duration.ZERO)).isInstanceOf(Admission.Busy.class);
        first.close();
        assertThat(keys.size()).isZero();
        try (Admission next = keys.admit(key, REQUEST, Duration.ZERO)) {
            assertThat(next).isInstanceOf(Admission.Entered.class);
            first.close();
            assertThat(keys.size()).as("a stale close never frees a later holder's key").isEqualTo(1);
        }
    }

    @Test
    void anotherScopeOrKeyIsAnotherEntry() {
        try (Admission a = keys.admit(key, REQUEST, Duration.ZERO);
                Admission b = keys.admit(IdempotencyKey.of("bob|POST /payments", "k-1"), REQUEST, Duration.ZERO);
                Admission c = keys.admit(IdempotencyKey.of(key.scope(), "k-2"), REQUEST, Duration.ZERO)) {
            assertThat(a).isInstanceOf(Admission.Entered.class);
            assertThat(b).isInstanceOf(Admission.Entered.class);
            assertThat(c).isInstanceOf(Admission.Entered.class);
        }
    }

    @Test
    void anotherRequestUnderAHeldKeyIsLeftToTheStore() {
        try (Admission first = keys.admit(key, REQUEST, Duration.ZERO)) {
            assertThat(keys.admit(key, OTHER, Duration.ofSeconds(30))).as("the record decides a mismatch")
                    .isInstanceOf(Admission.Unguarded.class);
        }
    }

    @Test
    void aDuplicateWaitsForTheHolderAndThenEnters() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = CompletableFuture.supplyAsync(
                () -> keys.admit(key, REQUEST, Duration.ofSeconds(30)));
        await().atMost(Duration.ofSeconds(10)).until(() -> keys.waiting() == 1);

        first.close();

        try (Admission second = duplicate.get(10, TimeUnit.SECONDS)) {
            assertThat(second).isInstanceOf(Admission.Entered.class);
            assertThat(keys.waiting()).isZero();
        }
    }

    @Test
    void aDuplicateAdmittedWithoutBlockingChainsOnTheHolderAndThenEnters() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));
        assertThat(duplicate).isNotDone();
        assertThat(keys.waiting()).isEqualTo(1);

        first.close();

        try (Admission second = duplicate.get(10, TimeUnit.SECONDS)) {
            assertThat(second).isInstanceOf(Admission.Entered.class);
            assertThat(keys.waiting()).isZero();
            assertThat(keys.size()).isEqualTo(1);
        }
        assertThat(keys.size()).isZero();
        assertThat(keys.admitAsync(key, OTHER, Duration.ZERO).get(10, TimeUnit.SECONDS)).as("free again")
                .isInstanceOf(Admission.Entered.class);
    }

    @Test
    void aDuplicateThatGivesUpWaitingNeverHoldsTheKey() {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));

        duplicate.cancel(false);
        first.close();

        assertThat(keys.waiting()).isZero();
        assertThat(keys.size()).isZero();
    }

    @Test
    void theEngineFreesTheKeyWhenTheWorkThrows() {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).build();
        IllegalStateException failure = new IllegalStateException("handler failed");

        assertThatThrownBy(() -> engine.oncePerInstance(key, REQUEST, Duration.ZERO, () -> {
            throw failure;
        })).isSameAs(failure);

        assertThat(engine.with(OperationPolicy.ofDefaults()).inFlight()).as("one registry per engine and its copies")
                .isSameAs(engine.inFlight());
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void theEngineAnswersADuplicateInFlightInProgressWithoutRunningIt() {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).build();

        Outcome<String> duplicate = engine.oncePerInstance(key, REQUEST, Duration.ZERO,
                () -> engine.oncePerInstance(key, REQUEST, Duration.ZERO, () -> {
                    throw new AssertionError("the duplicate ran");
                }));

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
    }

    @Test
    void duplicatesOfAHolderWhoseAnswerIsStoredGoOnToTheStoreTogether() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> blocking = CompletableFuture.supplyAsync(
                () -> keys.admit(key, REQUEST, Duration.ofSeconds(30)));
        CompletableFuture<Admission> chained = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));
        await().atMost(Duration.ofSeconds(10)).until(() -> keys.waiting() == 2);

        ((Admission.Entered) first).answered();
        first.close();

        assertThat(blocking.get(10, TimeUnit.SECONDS)).as("the store replays: no need to take turns")
                .isInstanceOf(Admission.Unguarded.class);
        assertThat(chained.get(10, TimeUnit.SECONDS)).isInstanceOf(Admission.Unguarded.class);
        assertThat(keys.size()).isZero();
        assertThat(keys.waiting()).isZero();
    }

    /**
     * A storm of one key: once the first request's answer is stored, the duplicates that waited for it replay at
     * once, not one after another (each taking its turn as the key's holder on this instance).
     */
    @Test
    void theEngineReplaysDuplicatesOfAStoredAnswerTogether() throws Exception {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).build();
        Duration wait = Duration.ofSeconds(30);
        int duplicates = 6;
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch together = new CountDownLatch(duplicates);
        ExecutorService threads = Executors.newFixedThreadPool(duplicates + 1);
        try {
            Future<Outcome<String>> original = threads.submit(() -> engine.oncePerInstance(key, REQUEST, wait,
                    () -> engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> {
                        running.countDown();
                        release.await();
                        return "paid";
                    })));
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            List<Future<Outcome<String>>> replays = new ArrayList<>();
            for (int i = 0; i < duplicates; i++) {
                replays.add(threads.submit(() -> engine.oncePerInstance(key, REQUEST, wait, () -> {
                    together.countDown();
                    awaitTogether(together);
                    return engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> {
                        throw new AssertionError("a duplicate ran the operation");
                    });
                })));
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> engine.inFlight().waiting() == duplicates);

            release.countDown();

            assertThat(original.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            for (Future<Outcome<String>> replay : replays) {
                assertThat(replay.get(10, TimeUnit.SECONDS)).isEqualTo(new Outcome.Replayed<>("paid"));
            }
        } finally {
            threads.shutdownNow();
        }
    }

    private static void awaitTogether(CountDownLatch together) {
        try {
            if (!together.await(5, TimeUnit.SECONDS)) {
                throw new AssertionError("the duplicates went to the store one at a time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** An answer that was not stored (released, to run again): the duplicates take their turns, one runs it. */
    @Test
    void duplicatesOfAHolderWithoutAStoredAnswerStillTakeTurns() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));

        first.close();

        try (Admission second = duplicate.get(10, TimeUnit.SECONDS)) {
            assertThat(second).isInstanceOf(Admission.Entered.class);
        }
    }
}
