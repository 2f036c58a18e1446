package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The in-process gate on the asynchronous engine: a duplicate of a request in flight on this
 * instance chains on its end instead of calling the store, and then gets what the store answers,
 * exactly as a duplicate at the blocking engine's gate does.
 */
class AsyncOncePerInstanceTest {
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final Duration LONG_WAIT = Duration.ofSeconds(60);
    private static final int DUPLICATES = 64;
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments amount=100".getBytes(UTF_8));
    private static final Fingerprint OTHER_REQUEST = Fingerprint.sha256("POST /payments amount=999".getBytes(UTF_8));

    private final InMemoryIdempotencyStore memory = new InMemoryIdempotencyStore();
    /** Counts the claims that reach the in-memory store. */
    private final FaultyStore counted = new FaultyStore(memory);
    /** Its stages complete later, on a thread of the store's own, as a driver's do. */
    private final LaterStore store = new LaterStore(counted);
    private final AsyncRetrySafe engine = AsyncRetrySafe.builder(store).build();
    private final IdempotencyKey key = IdempotencyKey.of("user-42:payments", "key-" + UUID.randomUUID());
    private final AtomicInteger runs = new AtomicInteger();
    /** The first run's answer, completed (or failed) by the test; later runs answer at once. */
    private final CompletableFuture<String> firstAnswer = new CompletableFuture<>();
    private final ExecutorService callers = Executors.newFixedThreadPool(DUPLICATES);

    @AfterEach
    void stop() {
        callers.shutdownNow();
        store.close();
    }

    private IdempotencyRecord record() {
        return memory.inspect(key).orElseThrow();
    }

    private CompletionStage<String> charge(Attempt attempt) {
        return runs.incrementAndGet() == 1 ? firstAnswer : CompletableFuture.completedFuture("receipt-" + runs.get());
    }

    private CompletionStage<Outcome<String>> request(Fingerprint fingerprint, Duration wait) {
        return engine.oncePerInstance(key, fingerprint, wait,
                () -> engine.execute(key, fingerprint, ResponseCodec.utf8(), this::charge));
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** {@code DUPLICATES} requests of the key from as many threads at once, the first of them still running at the end. */
    private List<CompletableFuture<Outcome<String>>> duplicatesInFlight() throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<CompletionStage<Outcome<String>>>> submitted = new ArrayList<>();
        for (int i = 0; i < DUPLICATES; i++) {
            submitted.add(callers.submit(() -> {
                start.await();
                return request(REQUEST, LONG_WAIT);
            }));
        }
        start.countDown();
        List<CompletableFuture<Outcome<String>>> outcomes = new ArrayList<>();
        for (Future<CompletionStage<Outcome<String>>> f : submitted) {
            outcomes.add(f.get(BOUND.toMillis(), TimeUnit.MILLISECONDS).toCompletableFuture());
        }
        await().atMost(BOUND).until(() -> engine.inFlight().waiting() == DUPLICATES - 1);
        return outcomes;
    }

    @Test
    void sixtyFourDuplicatesMakeOneStoreCallWhileTheFirstRunsAndAllGetItsAnswer() throws Exception {
        List<CompletableFuture<Outcome<String>>> outcomes = duplicatesInFlight();

        assertThat(runs).hasValue(1);
        assertThat(counted.claims()).as("no duplicate calls the store while the first runs").isEqualTo(1);
        assertThat(outcomes).noneMatch(CompletableFuture::isDone);

        firstAnswer.complete("receipt-1");

        int executed = 0;
        for (CompletableFuture<Outcome<String>> outcome : outcomes) {
            Outcome<String> answer = get(outcome);
            assertThat(answer.orThrow()).isEqualTo("receipt-1");
            executed += answer instanceof Outcome.Executed ? 1 : 0;
        }
        assertThat(executed).isEqualTo(1);
        assertThat(runs).hasValue(1);
        assertThat(record().attempt()).as("one claim took the key").isEqualTo(1);
        assertThat(record().status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(counted.claims()).as("each duplicate asked the store once, after the first ended")
                .isEqualTo(DUPLICATES);
        assertThat(engine.inFlight().size()).isZero();
        assertThat(engine.inFlight().waiting()).isZero();
    }

    @Test
    void whenTheFirstFailsTheWaitingDuplicatesGoToTheStoreAndOneOfThemRunsAgain() throws Exception {
        List<CompletableFuture<Outcome<String>>> outcomes = duplicatesInFlight();
        IllegalStateException declined = new IllegalStateException("provider declined");

        firstAnswer.completeExceptionally(declined);

        List<Throwable> failures = new ArrayList<>();
        List<Outcome<String>> answers = new ArrayList<>();
        for (CompletableFuture<Outcome<String>> outcome : outcomes) {
            try {
                answers.add(get(outcome));
            } catch (ExecutionException e) {
                failures.add(e.getCause());
            }
        }
        assertThat(failures).as("the first fails with its own failure, after its key was released")
                .containsExactly(declined);
        assertThat(runs).as("the released key is claimed again by one duplicate").hasValue(2);
        assertThat(answers).hasSize(DUPLICATES - 1).allSatisfy(a -> assertThat(a.orThrow()).isEqualTo("receipt-2"));
        assertThat(answers).filteredOn(a -> a instanceof Outcome.Executed).hasSize(1);
        assertThat(record().attempt()).as("the first's claim, released, and the one after it").isEqualTo(2);
        assertThat(record().status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void aDuplicateThatWaitedPastItsBoundIsInProgressWithoutAStoreCall() throws Exception {
        CompletionStage<Outcome<String>> first = request(REQUEST, LONG_WAIT);

        Outcome<String> duplicate = get(request(REQUEST, Duration.ofMillis(20)));
        Outcome<String> impatient = get(request(REQUEST, Duration.ZERO));

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
        assertThat(impatient).isEqualTo(duplicate);
        assertThat(counted.claims()).isEqualTo(1);
        assertThat(engine.inFlight().waiting()).isZero();
        assertThat(engine.inFlight().size()).as("the first still holds the key").isEqualTo(1);

        firstAnswer.complete("receipt-1");
        assertThat(get(first).orThrow()).isEqualTo("receipt-1");
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void anotherRequestOfTheKeyGoesToTheStoreWhichRefusesIt() throws Exception {
        CompletionStage<Outcome<String>> first = request(REQUEST, LONG_WAIT);

        Outcome<String> other = get(request(OTHER_REQUEST, LONG_WAIT));

        assertThat(other).isEqualTo(new Outcome.FingerprintMismatch<>());
        assertThat(counted.claims()).isEqualTo(2);
        firstAnswer.complete("receipt-1");
        get(first);
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void aCancelledDuplicateStopsWaitingAndNeverRuns() throws Exception {
        CompletionStage<Outcome<String>> first = request(REQUEST, LONG_WAIT);
        AtomicInteger cancelledRan = new AtomicInteger();
        CompletableFuture<Outcome<String>> cancelled = engine.<String>oncePerInstance(key, REQUEST, LONG_WAIT, () -> {
            cancelledRan.incrementAndGet();
            return CompletableFuture.completedFuture(new Outcome.FingerprintMismatch<>());
        }).toCompletableFuture();
        assertThat(engine.inFlight().waiting()).isEqualTo(1);

        cancelled.cancel(false);

        assertThat(engine.inFlight().waiting()).isZero();
        firstAnswer.complete("receipt-1");
        get(first);
        assertThat(cancelledRan).hasValue(0);
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void cancellingTheFirstsStageFreesItsKeyOnlyWhenItsWorkEnds() throws Exception {
        CompletableFuture<Outcome<String>> first = request(REQUEST, LONG_WAIT).toCompletableFuture();

        first.cancel(false);

        assertThat(engine.inFlight().size()).as("its work is still in flight").isEqualTo(1);
        firstAnswer.complete("receipt-1");
        await().atMost(BOUND).until(() -> engine.inFlight().size() == 0);
        assertThat(get(request(REQUEST, LONG_WAIT))).isEqualTo(new Outcome.Replayed<>("receipt-1"));
    }

    @Test
    void workThatThrowsFailsTheStageAndFreesTheKey() {
        IllegalStateException failure = new IllegalStateException("adapter failed");

        CompletionStage<Outcome<String>> outcome = engine.oncePerInstance(key, REQUEST, LONG_WAIT, () -> {
            throw failure;
        });

        assertThatThrownBy(() -> get(outcome)).isInstanceOf(ExecutionException.class).cause().isSameAs(failure);
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void oneRegistryForTheEngineItsCopiesAndTheBlockingEngineThatMadeIt() throws Exception {
        RetrySafe blocking = RetrySafe.builder(memory).build();
        AsyncRetrySafe async = blocking.withAsyncStore(store);
        assertThat(async.inFlight()).isSameAs(blocking.inFlight());
        assertThat(async.with(OperationPolicy.ofDefaults()).withStore(store).inFlight()).isSameAs(async.inFlight());

        Outcome<String> duplicate = blocking.oncePerInstance(key, REQUEST, Duration.ZERO,
                () -> async.<String>oncePerInstance(key, REQUEST, Duration.ZERO, () -> {
                    throw new AssertionError("the duplicate ran");
                }).toCompletableFuture().join());

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
        assertThat(blocking.inFlight().size()).isZero();
    }
}
