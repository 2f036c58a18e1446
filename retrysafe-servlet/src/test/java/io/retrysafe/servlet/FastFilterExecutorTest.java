package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The decorator's flow on the real engine (in-memory store, standalone executor) and an in-memory
 * fast path that records what it was asked: what is answered early, when the delegate runs, and what
 * is published or cleared after it.
 */
class FastFilterExecutorTest {
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("another request".getBytes(UTF_8));
    private static final StoredResponse CREATED = StoredResponse.of(201, Map.of("Location", List.of("/p/1")),
            "{\"id\":1}".getBytes(UTF_8));
    private static final Duration RETRY_AFTER = Duration.ofSeconds(3);

    /** A fast path in memory: entries and the calls made, in order. */
    static class MemoryFastPath implements FastPath {
        record Entry(Fingerprint fingerprint, StoredResponse response, Duration ttl) {
            boolean marker() {
                return response == null;
            }
        }

        final Map<IdempotencyKey, Entry> entries = new ConcurrentHashMap<>();
        final List<String> calls = new CopyOnWriteArrayList<>();

        @Override
        public Optional<Cached> lookup(IdempotencyKey key, Fingerprint fingerprint) {
            calls.add("lookup");
            Entry e = entries.get(key);
            if (e == null) {
                return Optional.empty();
            }
            if (e.marker()) {
                return Optional.of(new Cached.InFlight());
            }
            return Optional.of(e.fingerprint().matches(fingerprint) ? new Cached.Replay(e.response())
                    : new Cached.Mismatch());
        }

        @Override
        public boolean markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
            calls.add("markInFlight");
            return entries.putIfAbsent(key, new Entry(fingerprint, null, null)) == null;
        }

        @Override
        public void publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response, Duration ttl) {
            calls.add("publish");
            entries.put(key, new Entry(fingerprint, response, ttl));
        }

        @Override
        public void clear(IdempotencyKey key) {
            calls.add("clear");
            entries.computeIfPresent(key, (k, e) -> e.marker() ? null : e);
        }
    }

    /** The delegate: the real standalone executor, counted. */
    static final class CountingExecutor implements IdempotentExecutor {
        final IdempotentExecutor delegate;
        final AtomicInteger calls = new AtomicInteger();

        CountingExecutor(IdempotentExecutor delegate) {
            this.delegate = delegate;
        }

        @Override
        public Outcome<StoredResponse> execute(jakarta.servlet.http.HttpServletRequest request, IdempotencyKey key,
                Fingerprint fingerprint, OperationPolicy policy, io.retrysafe.Operation<StoredResponse> handler) {
            calls.incrementAndGet();
            return delegate.execute(request, key, fingerprint, policy, handler);
        }

        @Override
        public CompletionStage<Outcome<StoredResponse>> executeAsync(
                jakarta.servlet.http.HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
                OperationPolicy policy,
                io.retrysafe.Operation<? extends CompletionStage<StoredResponse>> handler) {
            calls.incrementAndGet();
            return delegate.executeAsync(request, key, fingerprint, policy, handler);
        }

        @Override
        public boolean isAsyncSupported() {
            return delegate.isAsyncSupported();
        }
    }

    private final InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
    private final List<Outcome<?>> heard = new CopyOnWriteArrayList<>();
    private final RetrySafe engine = RetrySafe.builder(store).name("fast-filter-test")
            .policy(OperationPolicy.custom().retention(Duration.ofMinutes(10)).retryAfter(RETRY_AFTER).build())
            .listener(new RetrySafeListener() {
                @Override
                public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                    heard.add(outcome);
                }
            }).build();
    private final CountingExecutor delegate = new CountingExecutor(IdempotentExecutor.standalone(engine));
    private final MemoryFastPath fastPath = new MemoryFastPath();
    private final AtomicLong nanos = new AtomicLong();
    private final FastFilterExecutor executor = FastFilterExecutor.builder(delegate, fastPath, engine)
            .nanoTime(nanos::get).build();
    private final IdempotencyKey key = IdempotencyKey.of("alice|POST /payments", "key-1");

    private Outcome<StoredResponse> run(Fingerprint fingerprint, StoredResponse response) {
        return executor.execute(null, key, fingerprint, null, attempt -> response);
    }

    /** A fast path whose non-blocking face takes a publish and a clear, and finishes neither until told. */
    static final class SlowToPublish extends MemoryFastPath {
        final CompletableFuture<Void> sent = new CompletableFuture<>();

        @Override
        public AsyncFastPath async() {
            AsyncFastPath now = super.async();
            return new AsyncFastPath() {
                @Override
                public CompletionStage<Optional<Cached>> lookup(IdempotencyKey key, Fingerprint fingerprint) {
                    return now.lookup(key, fingerprint);
                }

                @Override
                public CompletionStage<Boolean> markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
                    return now.markInFlight(key, fingerprint);
                }

                @Override
                public CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint,
                        StoredResponse response, Duration ttl) {
                    return sent.thenCompose(go -> now.publish(key, fingerprint, response, ttl));
                }

                @Override
                public CompletionStage<Void> clear(IdempotencyKey key) {
                    return sent.thenCompose(go -> now.clear(key));
                }
            };
        }
    }

    @Test
    void theAnswerDoesNotWaitForThePublishAfterIt() {
        SlowToPublish slow = new SlowToPublish();
        FastFilterExecutor notWaiting = FastFilterExecutor.builder(delegate, slow, engine).build();

        // On this thread: were the publish waited for, execute would not return until "sent" completes below.
        Outcome<StoredResponse> outcome = notWaiting.execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(slow.calls).as("looked up and marked; the publish not yet made").containsExactly("lookup",
                "markInFlight");
        slow.sent.complete(null);
        assertThat(slow.calls).containsExactly("lookup", "markInFlight", "publish");
        assertThat(notWaiting.execute(null, key, FINGERPRINT, null, attempt -> CREATED))
                .isInstanceOf(Outcome.Replayed.class);
        assertThat(delegate.calls).as("the retry was answered by the fast path").hasValue(1);
    }

    @Test
    void aMissRunsTheDelegateThenPublishesWhatItStoredForTheRetentionLeft() {
        Outcome<StoredResponse> outcome = executor.execute(null, key, FINGERPRINT, null, attempt -> {
            nanos.addAndGet(Duration.ofSeconds(4).toNanos()); // the handler takes 4 s
            return CREATED;
        });

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "publish");
        MemoryFastPath.Entry entry = fastPath.entries.get(key);
        assertThat(entry.response()).isEqualTo(CREATED).isEqualTo(store.inspect(key).orElseThrow().response().orElseThrow());
        assertThat(entry.ttl()).as("retention 10 min, 4 s of it gone while the record was written")
                .isEqualTo(Duration.ofMinutes(10).minusSeconds(4));
    }

    @Test
    void anAsynchronousAnswerIsPublishedWhenItCompletesAndTheMarkerHoldsTheKeyTill() {
        CompletableFuture<StoredResponse> later = new CompletableFuture<>();

        CompletableFuture<Outcome<StoredResponse>> outcome = executor
                .executeAsync(null, key, FINGERPRINT, null, attempt -> later).toCompletableFuture();

        assertThat(executor.isAsyncSupported()).isTrue();
        assertThat(outcome).isNotDone();
        assertThat(fastPath.entries.get(key).marker()).as("in flight while the work runs").isTrue();
        later.complete(CREATED);
        assertThat(outcome.join()).isInstanceOf(Outcome.Executed.class);
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "publish");
        assertThat(fastPath.entries.get(key).response()).isEqualTo(CREATED);
    }

    @Test
    void aFailedAsynchronousAnswerClearsTheMarker() {
        CompletableFuture<StoredResponse> later = new CompletableFuture<>();
        CompletableFuture<Outcome<StoredResponse>> outcome = executor
                .executeAsync(null, key, FINGERPRINT, null, attempt -> later).toCompletableFuture();

        later.completeExceptionally(new IllegalStateException("the work failed"));

        assertThat(outcome).isCompletedExceptionally();
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "clear");
        assertThat(fastPath.entries).doesNotContainKey(key);
    }

    @Test
    void theReplayTtlBoundsWhatIsPublished() {
        FastFilterExecutor bounded = FastFilterExecutor.builder(delegate, fastPath, engine)
                .replayTtl(Duration.ofMinutes(2)).build();

        bounded.execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        assertThat(fastPath.entries.get(key).ttl()).isEqualTo(Duration.ofMinutes(2));
        assertThat(FastFilterExecutor.builder(delegate, fastPath, engine).build().replayTtl())
                .isEqualTo(FastFilterExecutor.DEFAULT_REPLAY_TTL).isEqualTo(Duration.ofHours(1));
    }

    @Test
    void aRoutesPolicyDecidesTheTtl() {
        OperationPolicy shortRetention = OperationPolicy.from(engine.policy()).retention(Duration.ofSeconds(30)).build();

        executor.execute(null, key, FINGERPRINT, shortRetention, attempt -> CREATED);

        assertThat(fastPath.entries.get(key).ttl()).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void aCachedReplayIsAnsweredWithoutTheDelegate() {
        fastPath.publish(key, FINGERPRINT, CREATED, Duration.ofMinutes(1));
        fastPath.calls.clear();

        Outcome<StoredResponse> outcome = run(FINGERPRINT, StoredResponse.of(500, new byte[0]));

        assertThat(outcome).isEqualTo(new Outcome.Replayed<>(CREATED));
        assertThat(delegate.calls).hasValue(0);
        assertThat(fastPath.calls).containsExactly("lookup");
        assertThat(heard).as("the engine's listener hears it, for metrics").containsExactly(outcome);
    }

    @Test
    void aCachedResponseOfAnotherRequestIsAMismatchWithoutTheDelegate() {
        fastPath.publish(key, FINGERPRINT, CREATED, Duration.ofMinutes(1));

        Outcome<StoredResponse> outcome = run(OTHER, CREATED);

        assertThat(outcome).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(delegate.calls).hasValue(0);
        assertThat(heard).containsExactly(outcome);
    }

    @Test
    void aMarkerIsInProgressWithThePolicysRetryAfterWithoutTheDelegate() {
        fastPath.markInFlight(key, FINGERPRINT);
        fastPath.calls.clear();

        Outcome<StoredResponse> outcome = run(FINGERPRINT, CREATED);

        assertThat(outcome).isEqualTo(new Outcome.InProgress<>(RETRY_AFTER));
        assertThat(delegate.calls).hasValue(0);
        assertThat(fastPath.calls).as("someone else's marker is left alone").containsExactly("lookup");
    }

    @Test
    void losingTheRaceToMarkIsInProgressAndLeavesTheWinnersMarker() {
        FastPath racing = new MemoryFastPath() {
            @Override
            public Optional<Cached> lookup(IdempotencyKey k, Fingerprint f) {
                Optional<Cached> before = super.lookup(k, f);
                super.markInFlight(k, f); // another request marks between our lookup and our mark
                return before;
            }
        };
        FastFilterExecutor losing = FastFilterExecutor.builder(delegate, racing, engine).build();

        Outcome<StoredResponse> outcome = losing.execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        assertThat(outcome).isEqualTo(new Outcome.InProgress<>(RETRY_AFTER));
        assertThat(delegate.calls).hasValue(0);
        assertThat(((MemoryFastPath) racing).entries.get(key).marker()).isTrue();
        assertThat(((MemoryFastPath) racing).calls).doesNotContain("clear");
    }

    /**
     * Regression: a lookup that timed out (a miss) on a key whose response is cached made the mark
     * fail ({@code SET NX} on the response), and the completed request was answered 409 as if in flight.
     */
    @Test
    void aCachedResponseTheLookupMissedIsReplayedNotRefusedAsInProgress() {
        AtomicInteger lookups = new AtomicInteger();
        MemoryFastPath slow = new MemoryFastPath() {
            @Override
            public Optional<Cached> lookup(IdempotencyKey k, Fingerprint f) {
                Optional<Cached> found = super.lookup(k, f);
                return lookups.incrementAndGet() == 1 ? Optional.empty() : found; // the first one timed out
            }
        };
        slow.publish(key, FINGERPRINT, CREATED, Duration.ofMinutes(1));
        FastFilterExecutor executor = FastFilterExecutor.builder(delegate, slow, engine).build();

        Outcome<StoredResponse> same = executor.execute(null, key, FINGERPRINT, null, attempt -> CREATED);
        lookups.set(0);
        Outcome<StoredResponse> other = executor.execute(null, key, OTHER, null, attempt -> CREATED);

        assertThat(same).isEqualTo(new Outcome.Replayed<>(CREATED));
        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(delegate.calls).hasValue(0);
        assertThat(slow.entries.get(key).response()).as("the cached response stays").isEqualTo(CREATED);
        assertThat(heard).containsExactly(same, other);
    }

    @Test
    void aResponsePublishedBetweenTheLookupAndTheMarkIsReplayed() {
        MemoryFastPath racing = new MemoryFastPath() {
            @Override
            public Optional<Cached> lookup(IdempotencyKey k, Fingerprint f) {
                Optional<Cached> before = super.lookup(k, f);
                if (before.isEmpty()) {
                    publish(k, f, CREATED, Duration.ofMinutes(1)); // the first request completes meanwhile
                }
                return before;
            }
        };
        FastFilterExecutor executor = FastFilterExecutor.builder(delegate, racing, engine).build();

        Outcome<StoredResponse> outcome = executor.execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        assertThat(outcome).isEqualTo(new Outcome.Replayed<>(CREATED));
        assertThat(delegate.calls).hasValue(0);
        assertThat(racing.calls).containsExactly("lookup", "publish", "markInFlight", "lookup");
    }

    @Test
    void aReleasedResultClearsTheMarkerAndPublishesNothing() {
        Outcome<StoredResponse> outcome = run(FINGERPRINT, StoredResponse.of(503, new byte[0]));

        assertThat(outcome).isInstanceOfSatisfying(Outcome.Executed.class,
                e -> assertThat(e.completion()).isEqualTo(Outcome.Completion.RELEASED));
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "clear");
        assertThat(fastPath.entries).isEmpty();
    }

    @Test
    void aHandlerThatThrowsClearsTheMarkerAndTheExceptionPropagates() {
        assertThatThrownBy(() -> executor.execute(null, key, FINGERPRINT, null, attempt -> {
            throw new IllegalStateException("handler failed");
        })).isInstanceOf(IllegalStateException.class).hasMessage("handler failed");

        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "clear");
        assertThat(fastPath.entries).isEmpty();
    }

    @Test
    void aDelegateThatThrowsAfterTheHandlerRanClearsTheMarker() {
        IdempotentExecutor failingCommit = (request, k, fingerprint, policy, handler) -> {
            throw new io.retrysafe.StoreUnavailableException("jdbc", Duration.ofSeconds(1), "commit failed", null);
        };
        FastFilterExecutor failing = FastFilterExecutor.builder(failingCommit, fastPath, engine).build();

        assertThatThrownBy(() -> failing.execute(null, key, FINGERPRINT, null, attempt -> CREATED))
                .isInstanceOf(io.retrysafe.StoreUnavailableException.class);

        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "clear");
        assertThat(fastPath.entries).as("nothing that did not commit is cached").isEmpty();
    }

    @Test
    void aReplayFromTheDelegateWarmsTheFastPath() {
        IdempotentExecutor.standalone(engine).execute(null, key, FINGERPRINT, null, attempt -> CREATED);
        assertThat(fastPath.entries).isEmpty();

        Outcome<StoredResponse> outcome = run(FINGERPRINT, StoredResponse.of(500, new byte[0]));

        assertThat(outcome).isEqualTo(new Outcome.Replayed<>(CREATED));
        assertThat(delegate.calls).hasValue(1);
        assertThat(fastPath.entries.get(key).response()).isEqualTo(CREATED);
        assertThat(fastPath.entries.get(key).ttl()).as("the retention, bounded by the replay TTL")
                .isEqualTo(Duration.ofMinutes(10));
    }

    @Test
    void aRefusalFromTheDelegateClearsTheMarker() {
        IdempotentExecutor.standalone(engine).execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        Outcome<StoredResponse> outcome = run(OTHER, CREATED);

        assertThat(outcome).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "clear");
        assertThat(fastPath.entries).isEmpty();
    }

    @Test
    void aFastPathThatThrowsIsBypassed() {
        FastPath broken = new FastPath() {
            @Override
            public Optional<Cached> lookup(IdempotencyKey k, Fingerprint f) {
                throw new IllegalStateException("bug");
            }

            @Override
            public boolean markInFlight(IdempotencyKey k, Fingerprint f) {
                throw new IllegalStateException("bug");
            }

            @Override
            public void publish(IdempotencyKey k, Fingerprint f, StoredResponse r, Duration ttl) {
                throw new IllegalStateException("bug");
            }

            @Override
            public void clear(IdempotencyKey k) {
                throw new IllegalStateException("bug");
            }
        };
        FastFilterExecutor bypassed = FastFilterExecutor.builder(delegate, broken, engine).build();

        Outcome<StoredResponse> first = bypassed.execute(null, key, FINGERPRINT, null, attempt -> CREATED);
        Outcome<StoredResponse> retry = bypassed.execute(null, key, FINGERPRINT, null, attempt -> CREATED);

        assertThat(first).isInstanceOf(Outcome.Executed.class);
        assertThat(retry).isEqualTo(new Outcome.Replayed<>(CREATED));
        assertThat(delegate.calls).hasValue(2);
    }

    @Test
    void theBuilderRefusesAFastFilterAsDelegateAndSettingsTwice() {
        assertThatThrownBy(() -> FastFilterExecutor.builder(executor, fastPath, engine))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already a FastFilterExecutor");
        assertThatThrownBy(() -> FastFilterExecutor.builder(delegate, fastPath, engine).replayTtl(Duration.ofMinutes(1))
                .replayTtl(Duration.ofMinutes(2))).isInstanceOf(IllegalStateException.class)
                .hasMessage("replayTtl was already set to PT1M");
        assertThatThrownBy(() -> FastFilterExecutor.builder(delegate, fastPath, engine).replayTtl(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("replayTtl must be positive, but was PT0S");
    }
}
