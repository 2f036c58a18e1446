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
import java.util.function.Supplier;
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
        int duplicates = 6;
        CountDownLatch together = new CountDownLatch(duplicates);

        List<Outcome<String>> replays = storm(engine, null, duplicates, () -> {
            together.countDown();
            awaitTogether(together);
            return engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> {
                throw new AssertionError("a duplicate ran the operation");
            });
        });

        assertThat(replays).hasSize(duplicates).containsOnly(new Outcome.Replayed<>("paid"));
    }

    /**
     * Holds a request of the key in its operation until {@code duplicates} requests running {@code duplicate}
     * wait for it (through {@code oncePerInstance}, with {@code codec} when not null), then lets it end with
     * "paid" stored; returns what the duplicates got.
     */
    private List<Outcome<String>> storm(RetrySafe engine, ResponseCodec<String> codec, int duplicates,
            Supplier<Outcome<String>> duplicate) throws Exception {
        Duration wait = Duration.ofSeconds(30);
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Supplier<Outcome<String>> original = () -> engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> {
            running.countDown();
            release.await();
            return "paid";
        });
        ExecutorService threads = Executors.newFixedThreadPool(duplicates + 1);
        try {
            Future<Outcome<String>> first = threads.submit(() -> once(engine, codec, wait, original));
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            List<Future<Outcome<String>>> waiting = new ArrayList<>();
            for (int i = 0; i < duplicates; i++) {
                waiting.add(threads.submit(() -> once(engine, codec, wait, duplicate)));
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> engine.inFlight().waiting() == duplicates);

            release.countDown();

            assertThat(first.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
            List<Outcome<String>> outcomes = new ArrayList<>();
            for (Future<Outcome<String>> f : waiting) {
                outcomes.add(f.get(10, TimeUnit.SECONDS));
            }
            return outcomes;
        } finally {
            threads.shutdownNow();
        }
    }

    private Outcome<String> once(RetrySafe engine, ResponseCodec<String> codec, Duration wait,
            Supplier<Outcome<String>> work) {
        return codec == null ? engine.oncePerInstance(key, REQUEST, wait, work)
                : engine.oncePerInstance(key, REQUEST, wait, codec, work);
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

    @Test
    void aHolderThatLeavesItsAnswerGivesItToTheDuplicatesThatWaitedForIt() throws Exception {
        Object answer = new Object();
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> blocking = CompletableFuture.supplyAsync(
                () -> keys.admit(key, REQUEST, Duration.ofSeconds(30)));
        CompletableFuture<Admission> chained = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));
        await().atMost(Duration.ofSeconds(10)).until(() -> keys.waiting() == 2);

        ((Admission.Entered) first).answered(answer);
        first.close();

        assertThat(blocking.get(10, TimeUnit.SECONDS)).isEqualTo(new Admission.Answered(answer));
        assertThat(chained.get(10, TimeUnit.SECONDS)).as("the non-blocking engines ask the store")
                .isInstanceOf(Admission.Unguarded.class);
        assertThat(keys.size()).isZero();
    }

    /**
     * A storm of one key with the codec known: the duplicates that waited for the first request are answered from
     * memory, with what the store would replay (here redacted as it was stored), and none of them asks the store.
     */
    @Test
    void theEngineAnswersDuplicatesOfAStoredAnswerFromMemoryAsTheStoreWouldReplayIt() throws Exception {
        FaultyStore store = new FaultyStore(new InMemoryIdempotencyStore());
        RetrySafe engine = RetrySafe.builder(store).policy(OperationPolicy.custom()
                .protection(StoredResponseProtection.redacting(r -> StoredResponse.of(r.status(), r.headers(),
                        new String(r.body(), UTF_8).toUpperCase(java.util.Locale.ROOT).getBytes(UTF_8))))
                .build()).build();
        int duplicates = 16;

        List<Outcome<String>> replays = storm(engine, ResponseCodec.utf8(), duplicates, () -> {
            throw new AssertionError("a duplicate went on to the store");
        });

        assertThat(replays).hasSize(duplicates).containsOnly(new Outcome.Replayed<>("PAID"));
        assertThat(store.claims()).as("only the original asked the store").isEqualTo(1);
        assertThat(engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> "ran again"))
                .as("what the store replays afterwards").isEqualTo(new Outcome.Replayed<>("PAID"));
    }

    @Test
    void aDuplicateWithAnotherCodecAsksTheStore() throws Exception {
        FaultyStore store = new FaultyStore(new InMemoryIdempotencyStore());
        RetrySafe engine = RetrySafe.builder(store).build();
        ResponseCodec<String> another = new ResponseCodec<>() {
            @Override
            public StoredResponse encode(String result) {
                return ResponseCodec.utf8().encode(result);
            }

            @Override
            public String decode(StoredResponse stored) {
                return "from the store: " + ResponseCodec.utf8().decode(stored);
            }
        };
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Outcome<String>> original = CompletableFuture.supplyAsync(() -> engine.oncePerInstance(key,
                REQUEST, Duration.ofSeconds(30), ResponseCodec.utf8(),
                () -> engine.execute(key, REQUEST, ResponseCodec.utf8(), attempt -> {
                    release.await();
                    return "paid";
                })));
        await().atMost(Duration.ofSeconds(10)).until(() -> engine.inFlight().size() == 1);
        CompletableFuture<Outcome<String>> duplicate = CompletableFuture.supplyAsync(() -> engine.oncePerInstance(key,
                REQUEST, Duration.ofSeconds(30), another, () -> engine.execute(key, REQUEST, another, attempt -> "ran")));
        await().atMost(Duration.ofSeconds(10)).until(() -> engine.inFlight().waiting() == 1);

        release.countDown();

        assertThat(original.get(10, TimeUnit.SECONDS)).isInstanceOf(Outcome.Executed.class);
        assertThat(duplicate.get(10, TimeUnit.SECONDS)).isEqualTo(new Outcome.Replayed<>("from the store: paid"));
        assertThat(store.claims()).as("the duplicate asked the store").isEqualTo(2);
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
