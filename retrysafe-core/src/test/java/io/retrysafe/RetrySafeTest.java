package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Outcome.Completion;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RetrySafeTest {
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments amount=100".getBytes(UTF_8));
    private static final Fingerprint OTHER_REQUEST = Fingerprint.sha256("POST /payments amount=999".getBytes(UTF_8));

    /** An HTTP-like result: a status and a body. */
    record Reply(int status, String body) {
    }

    static final ResponseCodec<Reply> REPLY = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(Reply result) {
            return StoredResponse.of(result.status(), Map.of("Content-Type", List.of("text/plain")),
                    result.body().getBytes(UTF_8));
        }

        @Override
        public Reply decode(StoredResponse stored) {
            return new Reply(stored.status(), new String(stored.body(), UTF_8));
        }
    };

    private final InMemoryIdempotencyStore memory = new InMemoryIdempotencyStore();
    private final FaultyStore store = new FaultyStore(memory);
    private final RecordingListener events = new RecordingListener();
    private final IdempotencyKey key = IdempotencyKey.of("user-42:payments", "key-" + UUID.randomUUID());
    private final AtomicInteger runs = new AtomicInteger();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        pool.shutdownNow();
    }

    private RetrySafe engine() {
        return RetrySafe.builder(store).listener(events).build();
    }

    private RetrySafe engine(OperationPolicy policy) {
        return RetrySafe.builder(store).listener(events).policy(policy).build();
    }

    /** An operation that counts its runs and answers {@code reply}. */
    private Operation<Reply> answering(Reply reply) {
        return attempt -> {
            runs.incrementAndGet();
            return reply;
        };
    }

    private static <T> T get(Future<T> future) throws Exception {
        return future.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void awaitLatch(CountDownLatch latch, String what) throws InterruptedException {
        if (!latch.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("timed out after " + BOUND + " waiting for " + what);
        }
    }

    @Nested
    class RunAndReplay {

        @Test
        void firstExecuteRunsAndSecondReplaysWithoutRunning() {
            RetrySafe retrySafe = engine();
            AtomicReference<Attempt> seen = new AtomicReference<>();

            Outcome<Reply> first = retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                seen.set(attempt);
                runs.incrementAndGet();
                return new Reply(201, "created");
            });
            Outcome<Reply> second = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(500, "must not run")));

            assertThat(first).isEqualTo(new Outcome.Executed<>(new Reply(201, "created"), new Attempt(key, 1),
                    Completion.STORED));
            assertThat(first.isReplay()).isFalse();
            assertThat(seen.get().isFirst()).isTrue();
            assertThat(seen.get().key()).isEqualTo(key);
            assertThat(second).isEqualTo(new Outcome.Replayed<>(new Reply(201, "created")));
            assertThat(second.isReplay()).isTrue();
            assertThat(second.orThrow()).isEqualTo(new Reply(201, "created"));
            assertThat(runs).as("runs of the operation").hasValue(1);
        }

        @Test
        void differentFingerprintIsRefusedWithoutRunning() {
            RetrySafe retrySafe = engine();
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "paid")));

            Outcome<Reply> reused = retrySafe.execute(key, OTHER_REQUEST, REPLY, answering(new Reply(200, "other")));

            assertThat(reused).isEqualTo(new Outcome.FingerprintMismatch<>());
            assertThat(runs).as("runs of the operation").hasValue(1);
            assertThatThrownBy(reused::orThrow).isInstanceOfSatisfying(FingerprintMismatchException.class,
                    e -> assertThat(e.httpStatus()).isEqualTo(422));
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "again"))))
                    .as("the original request still replays").isEqualTo(new Outcome.Replayed<>(new Reply(200, "paid")));
        }

        @ParameterizedTest(name = "status {0} is released")
        @ValueSource(ints = {102, 408, 409, 425, 429, 500, 502, 503, 504})
        void transientResultReleasesTheKeySoTheRetryRunsAgain(int status) {
            RetrySafe retrySafe = engine();

            Outcome<Reply> first = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(status, "try again")));
            Outcome<Reply> retry = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));
            Outcome<Reply> replay = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(500, "must not run")));

            assertThat(first).isEqualTo(new Outcome.Executed<>(new Reply(status, "try again"), new Attempt(key, 1),
                    Completion.RELEASED));
            assertThat(retry).isEqualTo(new Outcome.Executed<>(new Reply(200, "ok"), new Attempt(key, 2),
                    Completion.STORED));
            assertThat(replay).isEqualTo(new Outcome.Replayed<>(new Reply(200, "ok")));
            assertThat(runs).as("runs of the operation").hasValue(2);
        }

        @ParameterizedTest(name = "status {0} is stored")
        @ValueSource(ints = {200, 201, 204, 302, 400, 404, 410, 422})
        void finalResultIsStoredAndReplayed(int status) {
            RetrySafe retrySafe = engine();

            Outcome<Reply> first = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(status, "final")));
            Outcome<Reply> retry = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "must not run")));

            assertThat(first).isEqualTo(new Outcome.Executed<>(new Reply(status, "final"), new Attempt(key, 1),
                    Completion.STORED));
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(new Reply(status, "final")));
            assertThat(runs).as("runs of the operation").hasValue(1);
        }

        @Test
        void storeAllPolicyStoresEvenA5xx() {
            RetrySafe retrySafe = engine(OperationPolicy.custom().outcomePolicy(OutcomePolicy.STORE_ALL).build());

            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(503, "stored anyway")));

            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "must not run"))))
                    .isEqualTo(new Outcome.Replayed<>(new Reply(503, "stored anyway")));
        }

        @Test
        void runtimeExceptionPropagatesUnchangedAndTheRetryRunsAgain() {
            RetrySafe retrySafe = engine();
            IllegalStateException boom = new IllegalStateException("payment provider said no");

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                runs.incrementAndGet();
                throw boom;
            })).isSameAs(boom);
            Outcome<Reply> retry = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));

            assertThat(retry).isEqualTo(new Outcome.Executed<>(new Reply(200, "ok"), new Attempt(key, 2),
                    Completion.STORED));
            assertThat(runs).hasValue(2);
        }

        @Test
        void checkedExceptionIsWrappedWithItsCauseAndTheRetryRunsAgain() {
            RetrySafe retrySafe = engine();
            IOException io = new IOException("connection reset");

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                throw io;
            })).isInstanceOfSatisfying(OperationFailedException.class, e -> assertThat(e.httpStatus()).isEqualTo(500))
                    .hasCauseReference(io)
                    .hasMessageContaining("connection reset");
            Outcome<Reply> retry = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));

            assertThat(retry).isInstanceOfSatisfying(Outcome.Executed.class,
                    e -> assertThat(e.attempt().number()).isEqualTo(2));
        }

        @Test
        void errorPropagatesAndReleasesTheKey() {
            RetrySafe retrySafe = engine();
            AssertionError error = new AssertionError("bug in the operation");

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                throw error;
            })).isSameAs(error);

            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
        }

        @Test
        void operationThatDoesNotKnowItsOutcomeLeavesTheKeyInProgressUntilItsLeaseEnds() {
            RetrySafe retrySafe = engine(OperationPolicy.custom().leaseTtl(Duration.ofMillis(300)).build());
            OutcomeUnknownException unknown = new OutcomeUnknownException("upstream", Duration.ofSeconds(1),
                    "sent, and no answer came", null);

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                runs.incrementAndGet();
                throw unknown;
            })).isSameAs(unknown);

            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "must not run yet"))))
                    .as("a retry while the lease lasts").isInstanceOf(Outcome.InProgress.class);
            assertThat(runs).hasValue(1);
            await().atMost(BOUND).until(() -> retrySafe.execute(key, REQUEST, REPLY,
                    answering(new Reply(200, "after the lease"))) instanceof Outcome.Executed<Reply>);
            assertThat(runs).as("runs once more, only after the lease ended").hasValue(2);
        }

        @Test
        void nullArgumentsAreRejectedByName() {
            RetrySafe retrySafe = engine();
            Operation<Reply> op = answering(new Reply(200, "ok"));

            assertThatThrownBy(() -> retrySafe.execute(null, REQUEST, REPLY, op)).hasMessage("key must not be null");
            assertThatThrownBy(() -> retrySafe.execute(key, null, REPLY, op)).hasMessage("fingerprint must not be null");
            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, null, op)).hasMessage("codec must not be null");
            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, null)).hasMessage("operation must not be null");
            assertThat(runs).hasValue(0);
        }
    }

    @Nested
    class Async {
        private final CompletableFuture<Reply> later = new CompletableFuture<>();

        private CompletionStage<Outcome<Reply>> startLater() {
            return engine().executeAsync(key, REQUEST, REPLY, attempt -> {
                runs.incrementAndGet();
                return later;
            });
        }

        @Test
        void keyIsHeldUntilTheStageCompletesThenTheResultIsStoredAndReplayed() {
            CompletableFuture<Outcome<Reply>> first = startLater().toCompletableFuture();

            assertThat(first).isNotDone();
            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(engine().execute(key, REQUEST, REPLY, answering(new Reply(200, "dup"))))
                    .isInstanceOf(Outcome.InProgress.class);

            later.complete(new Reply(201, "created"));

            assertThat(first.join()).isEqualTo(new Outcome.Executed<>(new Reply(201, "created"), new Attempt(key, 1),
                    Completion.STORED));
            Outcome<Reply> retry = startLater().toCompletableFuture().join();
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(new Reply(201, "created")));
            assertThat(runs).hasValue(1);
        }

        @Test
        void failedStageReleasesTheKeyAndFailsWithTheOperationsFailure() {
            CompletableFuture<Outcome<Reply>> first = startLater().toCompletableFuture();
            IllegalStateException failure = new IllegalStateException("payment provider down");

            later.completeExceptionally(failure);

            assertThatThrownBy(first::join).hasCause(failure);
            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
            CompletableFuture<Outcome<Reply>> retry = engine().executeAsync(key, REQUEST, REPLY,
                    attempt -> CompletableFuture.completedFuture(new Reply(200, "attempt " + attempt.number())))
                    .toCompletableFuture();
            assertThat(retry.join()).isInstanceOf(Outcome.Executed.class);
            assertThat(((Outcome.Executed<Reply>) retry.join()).value().body()).isEqualTo("attempt 2");
        }

        @Test
        void stageFailingWithOutcomeUnknownLeavesTheKeyInProgress() {
            CompletableFuture<Outcome<Reply>> first = startLater().toCompletableFuture();
            OutcomeUnknownException unknown = new OutcomeUnknownException("upstream", Duration.ofSeconds(1),
                    "sent, and no answer came", null);

            later.completeExceptionally(unknown);

            assertThatThrownBy(first::join).hasCause(unknown);
            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(engine().execute(key, REQUEST, REPLY, answering(new Reply(200, "dup"))))
                    .isInstanceOf(Outcome.InProgress.class);
            assertThat(runs).hasValue(1);
        }

        @Test
        void refusalsAreCompletedAtOnceWithoutRunning() {
            engine().execute(key, REQUEST, REPLY, answering(new Reply(200, "first")));

            Outcome<Reply> mismatch = engine().executeAsync(key, OTHER_REQUEST, REPLY, attempt -> later)
                    .toCompletableFuture().getNow(null);

            assertThat(mismatch).isInstanceOf(Outcome.FingerprintMismatch.class);
            assertThat(runs).hasValue(1);
        }
    }

    @Nested
    class InFlight {

        @Test
        void duplicateWhileInFlightIsRefusedAtOnceByDefault() throws Exception {
            RetrySafe retrySafe = engine();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(200, "first");
            }));
            awaitLatch(inside, "the first attempt to start");

            Outcome<Reply> duplicate = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "duplicate")));

            assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
            assertThat(store.claims()).as("claims: the first, and one by the duplicate that did not poll").isEqualTo(2);
            assertThatThrownBy(duplicate::orThrow).isInstanceOfSatisfying(InProgressException.class, e -> {
                assertThat(e.httpStatus()).isEqualTo(409);
                assertThat(e.retryAfter()).isEqualTo(OperationPolicy.DEFAULT_RETRY_AFTER);
            });
            finish.countDown();
            assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "late"))))
                    .isEqualTo(new Outcome.Replayed<>(new Reply(200, "first")));
            assertThat(runs).as("runs of the duplicate operations").hasValue(0);
        }

        @Test
        void duplicateWaitsForTheFirstAttemptAndReplaysIt() throws Exception {
            RetrySafe retrySafe = engine(OperationPolicy.custom().waitForResult(Duration.ofSeconds(5)).build());
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(200, "first");
            }));
            awaitLatch(inside, "the first attempt to start");

            Future<Outcome<Reply>> duplicate = pool.submit(
                    () -> retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "duplicate"))));
            await("the duplicate to be refused once and keep waiting").atMost(BOUND).until(() -> store.claims() >= 3);
            assertThat(duplicate).as("the duplicate waits while the first attempt runs").isNotDone();
            finish.countDown();

            assertThat(get(duplicate)).isEqualTo(new Outcome.Replayed<>(new Reply(200, "first")));
            assertThat(get(first)).isInstanceOf(Outcome.Executed.class);
            assertThat(runs).as("runs of the duplicate operation").hasValue(0);
        }

        @Test
        void waitingDuplicateThatIsInterruptedIsRefusedAndKeepsItsInterrupt() throws Exception {
            RetrySafe retrySafe = engine(OperationPolicy.custom().waitForResult(Duration.ofSeconds(30)).build());
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(200, "first");
            }));
            awaitLatch(inside, "the first attempt to start");
            AtomicReference<Outcome<Reply>> outcome = new AtomicReference<>();
            AtomicReference<Boolean> interrupted = new AtomicReference<>();
            Thread duplicate = new Thread(() -> {
                outcome.set(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "duplicate"))));
                interrupted.set(Thread.currentThread().isInterrupted());
            });
            duplicate.start();
            await("the duplicate to start waiting").atMost(BOUND).until(() -> store.claims() >= 2);

            duplicate.interrupt();
            duplicate.join(BOUND.toMillis());

            assertThat(duplicate.isAlive()).as("the interrupted duplicate returned").isFalse();
            assertThat(outcome.get()).isInstanceOf(Outcome.InProgress.class);
            assertThat(interrupted.get()).as("interrupt flag kept").isTrue();
            finish.countDown();
            get(first);
            assertThat(runs).hasValue(0);
        }

        @Test
        void expiredLeaseIsTakenOverAndTheFirstAttemptsLateResultIsRefused() throws Exception {
            OperationPolicy shortLease = OperationPolicy.custom().leaseTtl(Duration.ofMillis(200)).build();
            RetrySafe retrySafe = engine(shortLease);
            RetrySafe patient = retrySafe.with(OperationPolicy.from(shortLease).waitForResult(Duration.ofSeconds(5)).build());
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(200, "first");
            }));
            awaitLatch(inside, "the first attempt to start");

            Outcome<Reply> second = patient.execute(key, REQUEST, REPLY, attempt -> {
                runs.incrementAndGet();
                return new Reply(200, "second");
            });
            finish.countDown();
            Outcome<Reply> firstOutcome = get(first);

            assertThat(second).isEqualTo(new Outcome.Executed<>(new Reply(200, "second"), new Attempt(key, 2),
                    Completion.STORED));
            assertThat(firstOutcome).isEqualTo(new Outcome.Executed<>(new Reply(200, "first"), new Attempt(key, 1),
                    Completion.LEASE_LOST));
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "third"))))
                    .isEqualTo(new Outcome.Replayed<>(new Reply(200, "second")));
            assertThat(events.takeovers).containsExactly(2);
            assertThat(events.leaseLost).hasValue(1);
            assertThat(runs).hasValue(1);
        }

        @Test
        void thirtyTwoThreadsOnOneKeyRunTheOperationOnce() throws Exception {
            RetrySafe retrySafe = engine(OperationPolicy.custom().waitForResult(BOUND).build());
            int threads = 32;
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Outcome<Reply>>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(() -> {
                    awaitLatch(start, "the start signal");
                    return retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                        runs.incrementAndGet();
                        // Hold the key until every thread has asked the store, so that they really overlap.
                        await("all threads to reach the store").atMost(BOUND).until(() -> store.claims() >= threads);
                        return new Reply(201, "once");
                    });
                }));
            }
            start.countDown();

            List<Outcome<Reply>> outcomes = new ArrayList<>();
            for (Future<Outcome<Reply>> f : futures) {
                outcomes.add(get(f));
            }

            assertThat(runs).as("runs of the operation by 32 threads").hasValue(1);
            assertThat(outcomes).filteredOn(Outcome.Executed.class::isInstance).hasSize(1);
            assertThat(outcomes).filteredOn(o -> !(o instanceof Outcome.Executed)).hasSize(threads - 1)
                    .allMatch(Outcome.Replayed.class::isInstance);
            assertThat(outcomes).extracting(Outcome::orThrow).containsOnly(new Reply(201, "once"));
        }
    }

    @Nested
    class StoreFailures {
        private final IllegalStateException down = new IllegalStateException("connection refused");

        @Test
        void storeFailingBeforeTheRunRefusesAndDoesNotRun() {
            RetrySafe retrySafe = engine();
            store.failClaims(down);

            Outcome<Reply> outcome = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));

            assertThat(outcome).isInstanceOfSatisfying(Outcome.StoreUnavailable.class, s -> {
                assertThat(s.failure().storeName()).isEqualTo("faulty");
                assertThat(s.failure()).hasCauseReference(down).hasMessageContaining("connection refused");
                assertThat(s.retryAfter()).isEqualTo(OperationPolicy.DEFAULT_RETRY_AFTER);
            });
            assertThat(runs).as("runs while the store is down").hasValue(0);
            assertThatThrownBy(outcome::orThrow).isInstanceOfSatisfying(StoreUnavailableException.class,
                    e -> assertThat(e.httpStatus()).isEqualTo(503));
            assertThat(events.storeErrors).containsExactly("faulty:claim:connection refused");

            store.heal();
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok"))))
                    .as("once the store is back").isInstanceOf(Outcome.Executed.class);
        }

        @Test
        void theConfiguredRetryAfterAnswersAStoreFailureWhateverTheStoreSuggested() {
            RetrySafe retrySafe = RetrySafe.builder(store)
                    .policy(OperationPolicy.custom().retryAfter(Duration.ofSeconds(7)).build()).build();
            StoreUnavailableException suggested = new StoreUnavailableException("faulty", Duration.ofSeconds(1),
                    "pool exhausted", down);
            store.failClaims(suggested);

            Outcome<Reply> outcome = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));

            assertThat(outcome).isInstanceOfSatisfying(Outcome.StoreUnavailable.class, s -> {
                assertThat(s.retryAfter()).isEqualTo(Duration.ofSeconds(7));
                assertThat(s.failure()).hasMessage("pool exhausted").hasCauseReference(down);
                assertThat(s.failure().storeName()).isEqualTo("faulty");
            });
            assertThat(runs).hasValue(0);
        }

        @Test
        void fullStoreRefusesNewKeysAndKeepsReplayingOldOnes() {
            RetrySafe retrySafe = RetrySafe.builder(new InMemoryIdempotencyStore(java.time.Clock.systemUTC(), 1)).build();
            IdempotencyKey other = IdempotencyKey.of(key.scope(), "other");
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "first")));

            Outcome<Reply> refused = retrySafe.execute(other, REQUEST, REPLY, answering(new Reply(200, "second")));

            assertThat(refused).isInstanceOfSatisfying(Outcome.StoreUnavailable.class, s -> {
                assertThat(s.failure().storeName()).isEqualTo("memory");
                assertThat(s.failure()).hasMessageContaining("maxEntries=1");
            });
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "again"))))
                    .isEqualTo(new Outcome.Replayed<>(new Reply(200, "first")));
            assertThat(runs).hasValue(1);
        }

        @Test
        void failOpenRunsTheOperationUnprotected() {
            RetrySafe retrySafe = RetrySafe.builder(store).failOpen(true).build();
            StoreUnavailableException down = new StoreUnavailableException("faulty", null, "connection refused", null);
            store.failClaims(down);

            Outcome<Reply> first = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "unprotected")));
            Outcome<Reply> second = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "unprotected")));

            assertThat(first).isEqualTo(new Outcome.Unprotected<>(new Reply(200, "unprotected"), down));
            assertThat(first.orThrow()).isEqualTo(new Reply(200, "unprotected"));
            assertThat(second).isInstanceOf(Outcome.Unprotected.class);
            assertThat(runs).as("runs without protection: nothing was recorded").hasValue(2);
            assertThat(memory.inspect(key)).isEmpty();
        }

        @Test
        void failOpenNeverRunsUnprotectedOnAFullStore() {
            RetrySafe retrySafe = RetrySafe.builder(new InMemoryIdempotencyStore(java.time.Clock.systemUTC(), 1))
                    .failOpen(true).build();
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "first")));

            Outcome<Reply> refused = retrySafe.execute(IdempotencyKey.of(key.scope(), "other"), REQUEST, REPLY,
                    answering(new Reply(200, "second")));

            assertThat(refused).isInstanceOfSatisfying(Outcome.StoreUnavailable.class,
                    s -> assertThat(s.failure().isUnreachable()).as("the store answered: it is full").isFalse());
            assertThat(runs).as("a full store is no outage: nothing ran unprotected").hasValue(1);
        }

        @Test
        void failOpenNeverRunsUnprotectedWhenTheStoreFailsOtherwise() {
            RetrySafe retrySafe = RetrySafe.builder(store).failOpen(true).build();
            // What a store throws on a record it cannot read, or on a misconfiguration: it was reached.
            store.failClaims(new IllegalArgumentException("stored headers are not valid: unterminated name"));
            Outcome<Reply> corrupt = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ran")));
            store.failClaims(new StoreUnavailableException("faulty", null, "relation does not exist", null, false));
            Outcome<Reply> misconfigured = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ran")));

            assertThat(corrupt).isInstanceOfSatisfying(Outcome.StoreUnavailable.class, s -> assertThat(
                    s.failure().isUnreachable()).as("a store that threw was reached").isFalse());
            assertThat(misconfigured).isInstanceOf(Outcome.StoreUnavailable.class);
            assertThat(runs).hasValue(0);
        }

        @Test
        void storeFailingAtEveryCompletionIsAnUnknownOutcomeAndTheKeyStaysHeld() {
            RetrySafe retrySafe = RetrySafe.builder(store).listener(events).completionAttempts(3)
                    .completionBackoff(Duration.ofMillis(1)).build();
            store.failCompletions(down);

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ran"))))
                    .isInstanceOfSatisfying(OutcomeUnknownException.class, e -> {
                        assertThat(e.storeName()).isEqualTo("faulty");
                        assertThat(e.httpStatus()).isEqualTo(503);
                    })
                    .hasCauseReference(down)
                    .hasMessageContaining("ran, but the store failed to record its outcome in 3 attempts");
            assertThat(runs).hasValue(1);
            assertThat(events.storeErrors).containsExactly("faulty:complete:connection refused",
                    "faulty:complete:connection refused", "faulty:complete:connection refused");

            store.heal();
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "again"))))
                    .as("a retry while the unrecorded attempt's lease lasts is refused, not run twice")
                    .isInstanceOf(Outcome.InProgress.class);
            assertThat(runs).hasValue(1);
        }

        @Test
        void aCompletionThatFailsTransientlyIsWrittenAgainAndStored() {
            RetrySafe retrySafe = RetrySafe.builder(store).listener(events).completionBackoff(Duration.ofMillis(1))
                    .build();
            store.failCompletions(down, 2);

            Outcome<Reply> outcome = retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(201, "ran")));

            assertThat(outcome).isEqualTo(new Outcome.Executed<>(new Reply(201, "ran"), new Attempt(key, 1),
                    Completion.STORED));
            assertThat(events.storeErrors).hasSize(2);
            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
        }

        @Test
        void thePauseBeforeEachNewWriteOfAnOutcomeDoubles() {
            Duration first = Duration.ofMillis(40);
            List<Long> failedAt = new CopyOnWriteArrayList<>();
            RetrySafe retrySafe = RetrySafe.builder(store).completionAttempts(4).completionBackoff(first)
                    .listener(new RetrySafeListener() {
                        @Override
                        public void onStoreError(String storeName, String operation, RuntimeException error) {
                            failedAt.add(System.nanoTime());
                        }
                    }).build();
            store.failCompletions(down, 3);

            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(201, "ran"))))
                    .isInstanceOf(Outcome.Executed.class);

            assertThat(failedAt).hasSize(3);
            // Each write fails at once, so the time between two failures is the pause (and never shorter).
            assertThat(Duration.ofNanos(failedAt.get(1) - failedAt.get(0))).isGreaterThanOrEqualTo(first);
            assertThat(Duration.ofNanos(failedAt.get(2) - failedAt.get(1))).isGreaterThanOrEqualTo(first.multipliedBy(2));
            assertThat(memory.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
        }

        @Test
        void aCompletionInTheOperationsTransactionIsNotWrittenAgain() {
            RetrySafe retrySafe = engine();
            store.bindToTransaction();
            store.failCompletions(down);

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ran"))))
                    .isInstanceOf(StoreUnavailableException.class).isNotInstanceOf(OutcomeUnknownException.class)
                    .hasCauseReference(down);
            assertThat(events.storeErrors).containsExactly("faulty:complete:connection refused");
        }

        @Test
        void completionSettingsAreChecked() {
            assertThatThrownBy(() -> RetrySafe.builder(store).completionAttempts(0))
                    .hasMessage("completionAttempts must be between 1 and 10, but was 0");
            assertThatThrownBy(() -> RetrySafe.builder(store).completionBackoff(Duration.ofSeconds(11)))
                    .hasMessage("completionBackoff must be at most 10s, but was PT11S");
            assertThatThrownBy(() -> RetrySafe.builder(store).completionAttempts(2).completionAttempts(3))
                    .isInstanceOf(IllegalStateException.class);
        }

        @Test
        void storeFailingAtReleaseAfterAFailureStillThrowsTheOperationsException() {
            RetrySafe retrySafe = engine();
            store.failReleases(down);
            IllegalArgumentException boom = new IllegalArgumentException("bad amount");

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, attempt -> {
                throw boom;
            })).isSameAs(boom);
            assertThat(events.storeErrors).containsExactly("faulty:release:connection refused");
        }

        @Test
        void storeFailingAtReleaseOfATransientResultThrows() {
            RetrySafe retrySafe = engine();
            store.failReleases(down);

            assertThatThrownBy(() -> retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(503, "busy"))))
                    .isInstanceOf(StoreUnavailableException.class).hasCauseReference(down);
        }
    }

    @Nested
    class Listener {

        @Test
        void listenerThatThrowsNeverChangesAnOutcome() {
            RetrySafeListener broken = new RetrySafeListener() {
                @Override
                public void onOutcome(IdempotencyKey k, Outcome<?> outcome) {
                    throw new IllegalStateException("listener broke");
                }

                @Override
                public void onTakeover(IdempotencyKey k, int attempt) {
                    throw new IllegalStateException("listener broke");
                }

                @Override
                public void onLeaseLost(IdempotencyKey k) {
                    throw new IllegalStateException("listener broke");
                }

                @Override
                public void onStoreError(String storeName, String operation, RuntimeException error) {
                    throw new IllegalStateException("listener broke");
                }

                @Override
                public void onStoreLatency(String storeName, String operation, long nanos) {
                    throw new IllegalStateException("listener broke");
                }
            };
            RetrySafe retrySafe = RetrySafe.builder(store).listener(broken).build();

            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(503, "busy"))))
                    .isInstanceOfSatisfying(Outcome.Executed.class,
                            e -> assertThat(e.completion()).isEqualTo(Completion.RELEASED));
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok"))))
                    .as("a takeover after release").isInstanceOfSatisfying(Outcome.Executed.class,
                            e -> assertThat(e.completion()).isEqualTo(Completion.STORED));
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "no"))))
                    .isEqualTo(new Outcome.Replayed<>(new Reply(200, "ok")));
            assertThat(retrySafe.execute(key, OTHER_REQUEST, REPLY, answering(new Reply(200, "no"))))
                    .isEqualTo(new Outcome.FingerprintMismatch<>());
            store.failClaims(new IllegalStateException("down"));
            assertThat(retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "no"))))
                    .isInstanceOf(Outcome.StoreUnavailable.class);
            assertThat(runs).hasValue(2);
        }

        @Test
        void listenerHearsOutcomesLatenciesTakeoversAndStoreErrors() {
            RetrySafe retrySafe = engine();

            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(503, "busy")));
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "ok")));
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "no")));
            store.failClaims(new IllegalStateException("down"));
            retrySafe.execute(key, REQUEST, REPLY, answering(new Reply(200, "no")));

            assertThat(events.outcomes).extracting(o -> o.getClass().getSimpleName())
                    .containsExactly("Executed", "Executed", "Replayed", "StoreUnavailable");
            assertThat(events.outcomeKeys).containsOnly(key);
            assertThat(events.latencies).extracting(LatencyEvent::operation)
                    .containsExactly("claim", "release", "claim", "complete", "claim", "claim");
            assertThat(events.latencies).allSatisfy(l -> {
                assertThat(l.storeName()).isEqualTo("faulty");
                assertThat(l.nanos()).isNotNegative();
            });
            assertThat(events.takeovers).containsExactly(2);
            assertThat(events.storeErrors).containsExactly("faulty:claim:down");
            assertThat(events.leaseLost).hasValue(0);
        }
    }

    @Nested
    class OrThrow {

        @Test
        void refusalsMapToTheirExceptions() {
            StoreUnavailableException unavailable = new StoreUnavailableException("db", Duration.ofSeconds(2), "down", null);

            assertThatThrownBy(() -> new Outcome.InProgress<String>(Duration.ofSeconds(3)).orThrow())
                    .isInstanceOfSatisfying(InProgressException.class, e -> {
                        assertThat(e.httpStatus()).isEqualTo(409);
                        assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(3));
                    });
            assertThatThrownBy(() -> new Outcome.FingerprintMismatch<String>().orThrow())
                    .isInstanceOfSatisfying(FingerprintMismatchException.class,
                            e -> assertThat(e.httpStatus()).isEqualTo(422));
            assertThatThrownBy(() -> new Outcome.StoreUnavailable<String>(unavailable).orThrow()).isSameAs(unavailable)
                    .isInstanceOfSatisfying(StoreUnavailableException.class, e -> {
                        assertThat(e.httpStatus()).isEqualTo(503);
                        assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(2));
                        assertThat(e.storeName()).isEqualTo("db");
                    });
            assertThat(new Outcome.StoreUnavailable<String>(unavailable).retryAfter()).isEqualTo(Duration.ofSeconds(2));
        }

        @Test
        void answersReturnTheirValue() {
            assertThat(new Outcome.Executed<>("v", new Attempt(key, 1), Completion.STORED).orThrow()).isEqualTo("v");
            assertThat(new Outcome.Replayed<>("v").orThrow()).isEqualTo("v");
            assertThat(new Outcome.Unprotected<>("v", new IllegalStateException()).orThrow()).isEqualTo("v");
        }
    }

    @Nested
    class Builder {

        @Test
        void eachValueMayBeSetOnce() {
            assertThatThrownBy(() -> RetrySafe.builder(store).name("a").name("b"))
                    .isInstanceOf(IllegalStateException.class).hasMessage("name was already set to a");
            assertThatThrownBy(() -> RetrySafe.builder(store).policy(OperationPolicy.ofDefaults())
                    .policy(OperationPolicy.ofDefaults())).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("policy was already set to OperationPolicy[");
            assertThatThrownBy(() -> RetrySafe.builder(store).listener(RetrySafeListener.NONE)
                    .listener(RetrySafeListener.NONE)).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("listener was already set to");
            assertThatThrownBy(() -> RetrySafe.builder(store).failOpen(false).failOpen(true))
                    .isInstanceOf(IllegalStateException.class).hasMessage("failOpen was already set to false");
        }

        @Test
        void argumentsAreChecked() {
            assertThatThrownBy(() -> RetrySafe.builder(null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("store must not be null");
            assertThatThrownBy(() -> RetrySafe.builder(store).name(" ")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("name must not be blank, but was \" \"");
            assertThatThrownBy(() -> RetrySafe.builder(store).name(null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("name must not be null");
            assertThatThrownBy(() -> RetrySafe.builder(store).policy(null)).isInstanceOf(NullPointerException.class)
                    .hasMessage("policy must not be null");
        }

        @Test
        void defaultsAndCopies() {
            RetrySafe defaults = RetrySafe.builder(store).build();
            OperationPolicy week = OperationPolicy.custom().retention(Duration.ofDays(7)).build();

            assertThat(defaults.name()).isEqualTo(RetrySafe.DEFAULT_NAME);
            assertThat(defaults.policy()).isSameAs(OperationPolicy.ofDefaults());
            assertThat(defaults.store()).isSameAs(store);
            RetrySafe named = RetrySafe.builder(store).name("payments").build();
            assertThat(named.with(week).policy()).isSameAs(week);
            assertThat(named.with(week).name()).isEqualTo("payments");
            assertThat(named.withStore(memory).store()).isSameAs(memory);
            assertThat(named.policy()).as("with() leaves the original unchanged").isSameAs(OperationPolicy.ofDefaults());
            assertThat(named.toString()).contains("payments", "faulty");
        }
    }

    @Nested
    class Policy {

        @Test
        void defaultsAreThePublicConstants() {
            OperationPolicy defaults = OperationPolicy.ofDefaults();

            assertThat(defaults.retention()).isEqualTo(OperationPolicy.DEFAULT_RETENTION).isEqualTo(Duration.ofHours(24));
            assertThat(defaults.leaseTtl()).isEqualTo(OperationPolicy.DEFAULT_LEASE_TTL);
            assertThat(defaults.waitForResult()).isEqualTo(OperationPolicy.DEFAULT_WAIT_FOR_RESULT).isZero();
            assertThat(defaults.retryAfter()).isEqualTo(OperationPolicy.DEFAULT_RETRY_AFTER);
            assertThat(defaults.outcomePolicy()).isSameAs(OutcomePolicy.DEFAULT);
        }

        @Test
        void leaseLongerThanRetentionIsRejected() {
            assertThatThrownBy(() -> OperationPolicy.custom().retention(Duration.ofSeconds(30))
                    .leaseTtl(Duration.ofMinutes(1)).build())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("leaseTtl must not exceed retention, but was leaseTtl=PT1M, retention=PT30S");
        }

        @Test
        void negativeOrZeroDurationsAreRejectedSayingWhatTheyWere() {
            assertThatThrownBy(() -> OperationPolicy.custom().retention(Duration.ofSeconds(-1)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("retention must be positive, but was PT-1S");
            assertThatThrownBy(() -> OperationPolicy.custom().leaseTtl(Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("leaseTtl must be positive, but was PT0S");
            assertThatThrownBy(() -> OperationPolicy.custom().retryAfter(Duration.ofMillis(-5)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("retryAfter must be positive, but was PT-0.005S");
            assertThatThrownBy(() -> OperationPolicy.custom().waitForResult(Duration.ofMillis(-1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("waitForResult must not be negative, but was PT-0.001S");
            assertThatThrownBy(() -> OperationPolicy.custom().retention(null))
                    .isInstanceOf(NullPointerException.class).hasMessage("retention must not be null");
            assertThat(OperationPolicy.custom().waitForResult(Duration.ZERO).build().waitForResult()).isZero();
        }

        @Test
        void subMillisecondDurationsAreRejected() {
            assertThatThrownBy(() -> OperationPolicy.custom().leaseTtl(Duration.ofNanos(500))
                    .retention(Duration.ofNanos(500)).build())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("at least 1 ms")
                    .hasMessageContaining("but was leaseTtl=PT0.0000005S");
        }

        @Test
        void fromCopiesABasePolicy() {
            OperationPolicy base = OperationPolicy.custom().retention(Duration.ofDays(7)).leaseTtl(Duration.ofMinutes(2))
                    .waitForResult(Duration.ofSeconds(3)).retryAfter(Duration.ofSeconds(4))
                    .outcomePolicy(OutcomePolicy.STORE_ALL).build();

            OperationPolicy copy = OperationPolicy.from(base).retryAfter(Duration.ofSeconds(9)).build();

            assertThat(copy.retention()).isEqualTo(Duration.ofDays(7));
            assertThat(copy.leaseTtl()).isEqualTo(Duration.ofMinutes(2));
            assertThat(copy.waitForResult()).isEqualTo(Duration.ofSeconds(3));
            assertThat(copy.outcomePolicy()).isSameAs(OutcomePolicy.STORE_ALL);
            assertThat(copy.retryAfter()).isEqualTo(Duration.ofSeconds(9));
            assertThat(base.retryAfter()).isEqualTo(Duration.ofSeconds(4));
        }
    }

    record LatencyEvent(String storeName, String operation, long nanos) {
    }

    /** Records what the engine reports; thread-safe. */
    static final class RecordingListener implements RetrySafeListener {
        final Queue<Outcome<?>> outcomes = new ConcurrentLinkedQueue<>();
        final Queue<IdempotencyKey> outcomeKeys = new ConcurrentLinkedQueue<>();
        final Queue<Integer> takeovers = new ConcurrentLinkedQueue<>();
        final AtomicInteger leaseLost = new AtomicInteger();
        final Queue<String> storeErrors = new ConcurrentLinkedQueue<>();
        final Queue<LatencyEvent> latencies = new ConcurrentLinkedQueue<>();

        @Override
        public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
            outcomeKeys.add(key);
            outcomes.add(outcome);
        }

        @Override
        public void onTakeover(IdempotencyKey key, int attempt) {
            takeovers.add(attempt);
        }

        @Override
        public void onLeaseLost(IdempotencyKey key) {
            leaseLost.incrementAndGet();
        }

        @Override
        public void onStoreError(String storeName, String operation, RuntimeException error) {
            storeErrors.add(storeName + ":" + operation + ":" + error.getMessage());
        }

        @Override
        public void onStoreLatency(String storeName, String operation, long nanos) {
            latencies.add(new LatencyEvent(storeName, operation, nanos));
        }
    }
}
