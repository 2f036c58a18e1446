package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Outcome.Completion;
import io.retrysafe.RetrySafeTest.RecordingListener;
import io.retrysafe.RetrySafeTest.Reply;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The asynchronous engine on a store whose stages complete later, on the store's own thread: the
 * decisions of {@link RetrySafe} (run, replay, 409, 422, release, fencing, completion written again,
 * listener events), reached without a thread waiting for the store or sleeping through a wait.
 */
class AsyncRetrySafeTest {
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments amount=100".getBytes(UTF_8));
    private static final Fingerprint OTHER_REQUEST = Fingerprint.sha256("POST /payments amount=999".getBytes(UTF_8));

    private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
    private final InMemoryIdempotencyStore memory = InMemoryIdempotencyStore.builder().clock(clock).build();
    private final FaultyStore faulty = new FaultyStore(memory);
    private final LaterStore store = new LaterStore(faulty);
    private final RecordingListener events = new RecordingListener();
    private final IdempotencyKey key = IdempotencyKey.of("user-42:payments", "key-" + UUID.randomUUID());
    private final AtomicInteger runs = new AtomicInteger();
    /** The threads each operation ran on. */
    private final Queue<String> ranOn = new ConcurrentLinkedQueue<>();

    @AfterEach
    void stopLoop() {
        store.close();
    }

    private AsyncRetrySafe engine() {
        return AsyncRetrySafe.builder(store).listener(events).build();
    }

    private AsyncRetrySafe engine(OperationPolicy policy) {
        return AsyncRetrySafe.builder(store).listener(events).policy(policy).build();
    }

    private Operation<CompletionStage<Reply>> answering(Reply reply) {
        return attempt -> {
            runs.incrementAndGet();
            ranOn.add(Thread.currentThread().getName());
            return CompletableFuture.completedFuture(reply);
        };
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static Throwable failureOf(CompletionStage<?> stage) {
        assertThatThrownBy(() -> get(stage)).isInstanceOf(ExecutionException.class);
        return stage.toCompletableFuture().handle((v, t) -> t).join();
    }

    @Test
    void firstRunsOnTheStoresThreadAndIsStoredSecondReplaysWithoutRunning() throws Exception {
        AsyncRetrySafe retrySafe = engine();

        CountDownLatch onTheWire = store.hold();
        CompletionStage<Outcome<Reply>> running = retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY,
                answering(new Reply(201, "created")));
        onTheWire.countDown();
        Outcome<Reply> first = get(running);
        Outcome<Reply> second = get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(500, "no"))));

        assertThat(first).isEqualTo(new Outcome.Executed<>(new Reply(201, "created"), new Attempt(key, 1),
                Completion.STORED));
        assertThat(second).isEqualTo(new Outcome.Replayed<>(new Reply(201, "created")));
        assertThat(runs).hasValue(1);
        assertThat(ranOn).as("the operation runs where the claim's stage completed: nobody waited for it")
                .containsExactly(LaterStore.LOOP);
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(events.outcomes).containsExactly(first, second);
        assertThat(events.latencies).extracting(e -> e.operation()).containsExactly("claim", "complete", "claim");
    }

    @Test
    void anotherFingerprintIsRefusedWithoutRunning() throws Exception {
        AsyncRetrySafe retrySafe = engine();
        get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(201, "created"))));

        Outcome<Reply> reused = get(retrySafe.execute(key, OTHER_REQUEST, RetrySafeTest.REPLY,
                answering(new Reply(201, "other"))));

        assertThat(reused).isEqualTo(new Outcome.FingerprintMismatch<>());
        assertThat(runs).hasValue(1);
    }

    @Test
    void duplicateWhileTheFirstRunsIsInProgressAndTheFirstStillCompletes() throws Exception {
        AsyncRetrySafe retrySafe = engine();
        CompletableFuture<Reply> firstWork = new CompletableFuture<>();
        CompletionStage<Outcome<Reply>> first = retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> firstWork);
        awaitStatus(RecordStatus.IN_PROGRESS);

        Outcome<Reply> duplicate = get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "no"))));
        firstWork.complete(new Reply(200, "paid"));

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
        assertThat(get(first).isReplay()).isFalse();
        assertThat(runs).hasValue(0);
    }

    @Test
    void aDuplicateThatWaitsHoldsNoThreadAndReplaysOnceTheFirstCompletes() throws Exception {
        AsyncRetrySafe retrySafe = engine(OperationPolicy.custom().waitForResult(BOUND).build());
        CompletableFuture<Reply> firstWork = new CompletableFuture<>();
        CompletionStage<Outcome<Reply>> first = retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> firstWork);
        awaitStatus(RecordStatus.IN_PROGRESS);

        CompletionStage<Outcome<Reply>> duplicate = retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY,
                answering(new Reply(500, "must not run")));
        // Returned while the key is still held: the wait is scheduled, not slept on this thread.
        assertThat(duplicate.toCompletableFuture().isDone()).isFalse();
        firstWork.complete(new Reply(201, "created"));

        assertThat(get(duplicate)).isEqualTo(new Outcome.Replayed<>(new Reply(201, "created")));
        assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
        assertThat(runs).hasValue(0);
    }

    @Test
    void aFailedStageReleasesTheKeyBeforeItsFailureIsSeenAndTheRetryRunsAgain() throws Exception {
        AsyncRetrySafe retrySafe = engine();
        IllegalStateException boom = new IllegalStateException("declined");

        Throwable failure = failureOf(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY,
                attempt -> CompletableFuture.failedFuture(boom)));
        assertThat(failure).hasCauseReference(boom);
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.FAILED);

        Outcome<Reply> retry = get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "ok"))));
        assertThat(retry).isEqualTo(new Outcome.Executed<>(new Reply(200, "ok"), new Attempt(key, 2), Completion.STORED));
        assertThat(events.takeovers).containsExactly(2);
    }

    @Test
    void aStageFailingWithOutcomeUnknownLeavesTheKeyInProgressUntilItsLeaseEnds() throws Exception {
        AsyncRetrySafe retrySafe = engine(OperationPolicy.custom().leaseTtl(Duration.ofSeconds(30)).build());
        OutcomeUnknownException unknown = new OutcomeUnknownException("upstream", Duration.ofSeconds(1),
                "sent, and no answer came", null);

        Throwable failure = failureOf(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> {
            runs.incrementAndGet();
            return CompletableFuture.failedFuture(unknown);
        }));

        assertThat(failure).hasCauseReference(unknown);
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.IN_PROGRESS);
        assertThat(get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "must not run yet")))))
                .as("a retry while the lease lasts").isInstanceOf(Outcome.InProgress.class);
        assertThat(runs).hasValue(1);
        clock.advance(Duration.ofSeconds(31));
        assertThat(get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "after the lease")))))
                .isEqualTo(new Outcome.Executed<>(new Reply(200, "after the lease"), new Attempt(key, 2),
                        Completion.STORED));
        assertThat(runs).as("runs once more, only after the lease ended").hasValue(2);
    }

    @Test
    void anOperationThrowingOutcomeUnknownLeavesTheKeyInProgress() throws Exception {
        OutcomeUnknownException unknown = new OutcomeUnknownException("upstream", Duration.ofSeconds(1),
                "sent, and no answer came", null);

        Throwable failure = failureOf(engine().execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> {
            throw unknown;
        }));

        assertThat(failure).hasCauseReference(unknown);
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.IN_PROGRESS);
        assertThat(events.latencies).extracting(e -> e.operation()).as("no release").containsExactly("claim");
    }

    @Test
    void aCheckedExceptionThrownByTheOperationIsWrappedAndReleasesTheKey() throws Exception {
        AsyncRetrySafe retrySafe = engine();
        IOException io = new IOException("disk");

        Throwable failure = failureOf(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> {
            throw io;
        }));

        assertThat(failure).isInstanceOf(java.util.concurrent.CompletionException.class)
                .cause().isInstanceOf(OperationFailedException.class).hasCauseReference(io);
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.FAILED);
    }

    @Test
    void aServerErrorIsReleasedPerTheOutcomePolicy() throws Exception {
        Outcome<Reply> outcome = get(engine().execute(key, REQUEST, RetrySafeTest.REPLY,
                answering(new Reply(503, "later"))));

        assertThat(outcome).isEqualTo(new Outcome.Executed<>(new Reply(503, "later"), new Attempt(key, 1),
                Completion.RELEASED));
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.FAILED);
    }

    @Test
    void aStoreDownBeforeTheRunRefusesWithoutRunning() throws Exception {
        IllegalStateException down = new IllegalStateException("connection refused");
        faulty.failClaims(down);

        Outcome<Reply> outcome = get(engine().execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "no"))));

        assertThat(outcome).isInstanceOf(Outcome.StoreUnavailable.class);
        assertThat(((Outcome.StoreUnavailable<Reply>) outcome).failure()).hasCauseReference(down);
        assertThat(runs).hasValue(0);
        assertThat(events.storeErrors).containsExactly("faulty:claim:connection refused");
    }

    @Test
    void anUnreachableStoreRunsUnprotectedWhenTheEngineFailsOpen() throws Exception {
        StoreUnavailableException down = new StoreUnavailableException("faulty", null, "connection refused", null);
        faulty.failClaims(down);

        Outcome<Reply> outcome = get(AsyncRetrySafe.builder(store).failOpen(true).build()
                .execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "unprotected"))));

        assertThat(outcome).isEqualTo(new Outcome.Unprotected<>(new Reply(200, "unprotected"), down));
    }

    @Test
    void aCompletionThatFailsIsWrittenAgainAfterAScheduledPause() throws Exception {
        IllegalStateException down = new IllegalStateException("connection reset");
        faulty.failCompletions(down, 2);
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store).listener(events)
                .completionBackoff(Duration.ofMillis(20)).build();

        Outcome<Reply> outcome = get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(201, "ok"))));

        assertThat(outcome).isEqualTo(new Outcome.Executed<>(new Reply(201, "ok"), new Attempt(key, 1), Completion.STORED));
        assertThat(events.storeErrors).containsExactly("faulty:complete:connection reset",
                "faulty:complete:connection reset");
        assertThat(runs).hasValue(1);
    }

    @Test
    void thePauseBeforeEachNewWriteOfAnOutcomeDoubles() throws Exception {
        Duration first = Duration.ofMillis(40);
        List<Long> failedAt = new CopyOnWriteArrayList<>();
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store).completionAttempts(4).completionBackoff(first)
                .listener(new RetrySafeListener() {
                    @Override
                    public void onStoreError(String storeName, String operation, RuntimeException error) {
                        failedAt.add(System.nanoTime());
                    }
                }).build();
        faulty.failCompletions(new IllegalStateException("connection reset"), 3);

        assertThat(get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(201, "ran")))))
                .isInstanceOf(Outcome.Executed.class);

        assertThat(failedAt).hasSize(3);
        // Each write fails at once, so the time between two failures is the scheduled pause (and never shorter).
        assertThat(Duration.ofNanos(failedAt.get(1) - failedAt.get(0))).isGreaterThanOrEqualTo(first);
        assertThat(Duration.ofNanos(failedAt.get(2) - failedAt.get(1))).isGreaterThanOrEqualTo(first.multipliedBy(2));
        assertThat(memory.inspect(key)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void aCompletionThatKeepsFailingIsAnUnknownOutcome() {
        IllegalStateException down = new IllegalStateException("connection reset");
        faulty.failCompletions(down);
        AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store).listener(events).completionAttempts(3)
                .completionBackoff(Duration.ofMillis(1)).build();

        Throwable failure = failureOf(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY,
                answering(new Reply(201, "ok"))));

        assertThat(failure.getCause()).isInstanceOf(OutcomeUnknownException.class).hasCauseReference(down)
                .hasMessageContaining("in 3 attempts");
        assertThat(events.storeErrors).hasSize(3);
    }

    @Test
    void aCompletionInTheOperationsTransactionIsNotWrittenAgain() {
        faulty.bindToTransaction();
        IllegalStateException down = new IllegalStateException("connection refused");
        faulty.failCompletions(down);

        Throwable failure = failureOf(engine().execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(200, "ran"))));

        assertThat(failure.getCause()).isInstanceOf(StoreUnavailableException.class)
                .isNotInstanceOf(OutcomeUnknownException.class).hasCauseReference(down);
        assertThat(events.storeErrors).containsExactly("faulty:complete:connection refused");
    }

    @Test
    void anAttemptTakenOverIsFencedOffAndItsResultIsNotStored() throws Exception {
        AsyncRetrySafe retrySafe = engine(OperationPolicy.custom().leaseTtl(Duration.ofSeconds(30)).build());
        CompletableFuture<Reply> slow = new CompletableFuture<>();
        CompletionStage<Outcome<Reply>> first = retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> slow);
        awaitStatus(RecordStatus.IN_PROGRESS);
        clock.advance(Duration.ofSeconds(31));

        Outcome<Reply> second = get(retrySafe.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(201, "second"))));
        slow.complete(new Reply(201, "first"));

        assertThat(second).isEqualTo(new Outcome.Executed<>(new Reply(201, "second"), new Attempt(key, 2),
                Completion.STORED));
        assertThat(get(first)).isEqualTo(new Outcome.Executed<>(new Reply(201, "first"), new Attempt(key, 1),
                Completion.LEASE_LOST));
        assertThat(events.leaseLost).hasValue(1);
        assertThat(memory.inspect(key).orElseThrow().response().orElseThrow().body()).isEqualTo("second".getBytes(UTF_8));
    }

    @Test
    void theBlockingEnginesSettingsCarryOverToTheAsynchronousOne() throws Exception {
        RetrySafe blocking = RetrySafe.builder(memory).name("payments").listener(events)
                .policy(OperationPolicy.custom().retryAfter(Duration.ofSeconds(7)).build()).build();
        AsyncRetrySafe async = blocking.withAsyncStore(memory.async());
        blocking.execute(key, REQUEST, RetrySafeTest.REPLY, attempt -> new Reply(201, "blocking"));

        Outcome<Reply> replay = get(async.execute(key, REQUEST, RetrySafeTest.REPLY, answering(new Reply(500, "no"))));

        assertThat(async.name()).isEqualTo("payments");
        assertThat(async.policy().retryAfter()).isEqualTo(Duration.ofSeconds(7));
        assertThat(replay).isEqualTo(new Outcome.Replayed<>(new Reply(201, "blocking")));
        assertThat(events.outcomes).hasSize(2);
    }

    private void awaitStatus(RecordStatus status) {
        org.awaitility.Awaitility.await().atMost(BOUND).until(
                () -> memory.inspect(key).map(r -> r.status() == status).orElse(false));
    }
}
