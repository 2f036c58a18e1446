package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** What is specific to the reference store: its bound and its injectable clock. The contract is in the TCK. */
class InMemoryIdempotencyStoreTest {
    private static final Instant T0 = Instant.parse("2030-01-01T00:00:00Z");
    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration RETENTION = Duration.ofMinutes(1);
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(UTF_8));

    private final MutableClock clock = new MutableClock(T0);
    private final String scope = "memory-" + UUID.randomUUID();
    private ExecutorService pool;

    @AfterEach
    void stopThreads() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    /** A store whose bound one scope may take whole, as these tests use one scope. */
    private InMemoryIdempotencyStore wholeTo(int maxEntries) {
        return InMemoryIdempotencyStore.builder().clock(clock).maxEntries(maxEntries).scopeSharePercent(100).build();
    }

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private static ClaimRequest request(IdempotencyKey key) {
        return new ClaimRequest(key, FINGERPRINT, OwnerToken.random(), LEASE, RETENTION);
    }

    private static StoredResponse response(String body) {
        return StoredResponse.of(200, body.getBytes(UTF_8));
    }

    private static ClaimResult.Claimed claimed(ClaimResult result) {
        assertThat(result).as("claim result").isInstanceOf(ClaimResult.Claimed.class);
        return (ClaimResult.Claimed) result;
    }

    @Nested
    class Bound {
        private final InMemoryIdempotencyStore store = wholeTo(3);

        @Test
        void claimOfNewKeyAtTheBoundFailsNamingTheBound() {
            for (int i = 0; i < 3; i++) {
                claimed(store.tryClaim(request(key("k" + i))));
            }

            assertThatThrownBy(() -> store.tryClaim(request(key("one-too-many"))))
                    .isInstanceOfSatisfying(StoreUnavailableException.class, e -> {
                        assertThat(e.storeName()).isEqualTo("memory");
                        assertThat(e.retryAfter()).isPositive();
                        assertThat(e.httpStatus()).isEqualTo(503);
                    })
                    .hasMessageContaining("full")
                    .hasMessageContaining("maxEntries=3");
            assertThat(store.size()).isEqualTo(3);
            assertThat(store.inspect(key("one-too-many"))).as("a refused key leaves no record").isEmpty();
        }

        @Test
        void keysAlreadyStoredKeepWorkingAtTheBound() {
            ClaimResult.Claimed completed = claimed(store.tryClaim(request(key("completed"))));
            ClaimResult.Claimed released = claimed(store.tryClaim(request(key("released"))));
            claimed(store.tryClaim(request(key("held"))));
            assertThat(store.complete(key("completed"), completed.token(), response("kept"), RETENTION))
                    .isEqualTo(FencedWrite.COMMITTED);
            assertThat(store.release(key("released"), released.token())).isEqualTo(FencedWrite.COMMITTED);

            assertThat(store.tryClaim(request(key("completed"))))
                    .isEqualTo(new ClaimResult.Replay(response("kept")));
            assertThat(claimed(store.tryClaim(request(key("released")))).attempt()).isEqualTo(2);
            assertThat(store.tryClaim(request(key("held")))).isInstanceOf(ClaimResult.InProgress.class);
            assertThat(store.size()).isEqualTo(3);
        }

        @Test
        void expiredRecordsArePurgedToMakeRoom() {
            for (int i = 0; i < 3; i++) {
                ClaimResult.Claimed c = claimed(store.tryClaim(request(key("old" + i))));
                store.complete(key("old" + i), c.token(), response("old"), RETENTION);
            }
            clock.advance(RETENTION);

            assertThat(claimed(store.tryClaim(request(key("new")))).attempt()).isEqualTo(1);

            assertThat(store.size()).as("the three expired records were purged, the new one added").isEqualTo(1);
            claimed(store.tryClaim(request(key("new2"))));
            claimed(store.tryClaim(request(key("new3"))));
            assertThatThrownBy(() -> store.tryClaim(request(key("new4")))).isInstanceOf(StoreUnavailableException.class);
        }

        @Test
        void expiredKeyIsClaimedAgainInPlaceAtTheBound() {
            InMemoryIdempotencyStore one = wholeTo(1);
            ClaimResult.Claimed c = claimed(one.tryClaim(request(key("only"))));
            one.complete(key("only"), c.token(), response("old"), RETENTION);
            clock.advance(RETENTION);

            assertThat(claimed(one.tryClaim(request(key("only")))).attempt()).isEqualTo(1);
            assertThat(one.size()).isEqualTo(1);
        }

        @Test
        void boundIsExactUnderSixteenConcurrentThreads() throws Exception {
            InMemoryIdempotencyStore bounded = wholeTo(100);

            List<ClaimResult> claims = new ArrayList<>();
            int refused = claimConcurrently(bounded, 16, 20, claims);

            assertThat(claims).as("claims that succeeded").hasSize(100).allMatch(ClaimResult.Claimed.class::isInstance);
            assertThat(refused).as("claims refused with StoreUnavailableException").isEqualTo(16 * 20 - 100);
            assertThat(bounded.size()).isEqualTo(100);
        }

        @Test
        void boundHoldsWhileExpiredRecordsArePurgedConcurrently() throws Exception {
            InMemoryIdempotencyStore bounded = wholeTo(100);
            for (int i = 0; i < 100; i++) {
                ClaimResult.Claimed c = claimed(bounded.tryClaim(request(key("expired" + i))));
                bounded.complete(key("expired" + i), c.token(), response("old"), RETENTION);
            }
            clock.advance(RETENTION);

            List<ClaimResult> claims = new ArrayList<>();
            claimConcurrently(bounded, 16, 20, claims);

            assertThat(claims).as("claims that succeeded while expired records were purged").isNotEmpty()
                    .hasSizeLessThanOrEqualTo(100);
            assertThat(bounded.size()).as("records held").isLessThanOrEqualTo(100);
            assertThat(bounded.purgeExpired(Integer.MAX_VALUE) + claims.size()).as("expired left plus new")
                    .isLessThanOrEqualTo(100);
            assertThat(bounded.size()).as("records held once every expired one is purged").isEqualTo(claims.size());
        }

        /** Claims {@code perThread} distinct keys from each of {@code threads} threads; returns how many were refused. */
        private int claimConcurrently(InMemoryIdempotencyStore target, int threads, int perThread,
                List<ClaimResult> succeeded) throws Exception {
            pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<int[]>> futures = new ArrayList<>();
            List<ClaimResult> results = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Callable<int[]> task = () -> {
                    start.await();
                    int refusedHere = 0;
                    for (int i = 0; i < perThread; i++) {
                        try {
                            results.add(target.tryClaim(request(key("t" + thread + "-" + i))));
                        } catch (StoreUnavailableException e) {
                            refusedHere++;
                        }
                    }
                    return new int[] {refusedHere};
                };
                futures.add(pool.submit(task));
            }
            start.countDown();
            int refused = 0;
            for (Future<int[]> f : futures) {
                refused += f.get(30, TimeUnit.SECONDS)[0];
            }
            succeeded.addAll(results);
            return refused;
        }
    }

    @Nested
    class Expiry {
        private final InMemoryIdempotencyStore store = wholeTo(1000);

        @Test
        void leaseCanBeTakenOverExactlyWhenItEnds() {
            ClaimResult.Claimed first = claimed(store.tryClaim(request(key("k"))));
            clock.advance(LEASE.minusMillis(1));

            assertThat(store.tryClaim(request(key("k"))))
                    .isEqualTo(new ClaimResult.InProgress(Duration.ofMillis(1)));

            clock.advance(Duration.ofMillis(1));
            ClaimResult.Claimed takeover = claimed(store.tryClaim(request(key("k"))));
            assertThat(takeover.attempt()).isEqualTo(2);
            assertThat(store.complete(key("k"), first.token(), response("old"), RETENTION))
                    .isEqualTo(FencedWrite.LEASE_LOST);
            assertThat(store.inspect(key("k")).orElseThrow().createdAt()).as("a takeover keeps the record's creation time")
                    .isEqualTo(T0);
        }

        @Test
        void lateCompletionWithinRetentionIsStored() {
            ClaimResult.Claimed first = claimed(store.tryClaim(request(key("k"))));
            clock.advance(LEASE.plusSeconds(5));

            assertThat(store.complete(key("k"), first.token(), response("late"), RETENTION))
                    .isEqualTo(FencedWrite.COMMITTED);
            assertThat(store.tryClaim(request(key("k")))).isEqualTo(new ClaimResult.Replay(response("late")));
        }

        @Test
        void completedRecordExpiresExactlyAtItsRetention() {
            ClaimResult.Claimed c = claimed(store.tryClaim(request(key("k"))));
            clock.advance(Duration.ofSeconds(5));
            store.complete(key("k"), c.token(), response("done"), RETENTION);
            clock.advance(RETENTION.minusMillis(1));

            assertThat(store.inspect(key("k"))).isPresent();
            assertThat(store.tryClaim(request(key("k")))).isInstanceOf(ClaimResult.Replay.class);

            clock.advance(Duration.ofMillis(1));
            assertThat(store.inspect(key("k"))).as("inspect at expiresAt").isEmpty();
            assertThat(claimed(store.tryClaim(request(key("k")))).attempt()).isEqualTo(1);
        }

        @Test
        void retentionOfACompletedRecordCountsFromItsCompletion() {
            ClaimResult.Claimed c = claimed(store.tryClaim(request(key("k"))));
            clock.advance(Duration.ofSeconds(50));
            store.complete(key("k"), c.token(), response("done"), RETENTION);
            clock.advance(Duration.ofSeconds(30));

            assertThat(store.tryClaim(request(key("k"))))
                    .as("80 s after the claim, 30 s after completing with a retention of 60 s")
                    .isEqualTo(new ClaimResult.Replay(response("done")));
        }

        @Test
        void inProgressRecordExpiresWithTheClaimsRetention() {
            ClaimResult.Claimed c = claimed(store.tryClaim(request(key("k"))));
            clock.advance(RETENTION);

            assertThat(store.inspect(key("k"))).isEmpty();
            assertThat(store.complete(key("k"), c.token(), response("too late"), RETENTION))
                    .isEqualTo(FencedWrite.LEASE_LOST);
            assertThat(claimed(store.tryClaim(request(key("k")))).attempt()).isEqualTo(1);
        }

        @Test
        void inspectReportsTheStoresTimes() {
            ClaimResult.Claimed c = claimed(store.tryClaim(request(key("k"))));
            IdempotencyRecord held = store.inspect(key("k")).orElseThrow();
            assertThat(held.createdAt()).isEqualTo(T0);
            assertThat(held.leaseExpiresAt()).isEqualTo(T0.plus(LEASE));
            assertThat(held.expiresAt()).isEqualTo(T0.plus(RETENTION));
            assertThat(held.completedAt()).isNull();

            clock.advance(Duration.ofSeconds(3));
            store.complete(key("k"), c.token(), response("done"), Duration.ofHours(2));

            IdempotencyRecord done = store.inspect(key("k")).orElseThrow();
            assertThat(done.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(done.createdAt()).isEqualTo(T0);
            assertThat(done.completedAt()).isEqualTo(T0.plusSeconds(3));
            assertThat(done.expiresAt()).isEqualTo(T0.plusSeconds(3).plus(Duration.ofHours(2)));
        }

        @Test
        void purgeExpiredDeletesExpiredRecordsOnlyAndAtMostLimit() {
            for (int i = 0; i < 5; i++) {
                ClaimResult.Claimed c = claimed(store.tryClaim(request(key("old" + i))));
                store.complete(key("old" + i), c.token(), response("old"), Duration.ofSeconds(1));
            }
            ClaimResult.Claimed live = claimed(store.tryClaim(request(key("live"))));
            store.complete(key("live"), live.token(), response("live"), Duration.ofHours(1));
            claimed(store.tryClaim(request(key("held"))));
            clock.advance(Duration.ofSeconds(1));

            assertThat(store.purgeExpired(2)).isEqualTo(2);
            assertThat(store.size()).isEqualTo(5);
            assertThat(store.purgeExpired(10)).isEqualTo(3);
            assertThat(store.size()).isEqualTo(2);
            assertThat(store.purgeExpired(10)).isZero();
            assertThat(store.tryClaim(request(key("live")))).isEqualTo(new ClaimResult.Replay(response("live")));
            assertThat(store.tryClaim(request(key("held")))).isInstanceOf(ClaimResult.InProgress.class);
        }

        @Test
        void purgeLimitMustBePositive() {
            assertThatThrownBy(() -> store.purgeExpired(0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("limit must be between 1 and 2147483647, but was 0");
        }
    }

    @Test
    void constructorChecksItsArguments() {
        assertThatThrownBy(() -> wholeTo(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxEntries must be between 1 and 2147483647, but was 0");
        assertThatThrownBy(() -> new InMemoryIdempotencyStore(null, 10)).isInstanceOf(NullPointerException.class)
                .hasMessage("clock must not be null");
    }

    @Test
    void defaults() {
        InMemoryIdempotencyStore store = new InMemoryIdempotencyStore();
        assertThat(store.maxEntries()).isEqualTo(InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES);
        assertThat(store.name()).isEqualTo("memory");
        assertThat(store.size()).isZero();
    }

    @Nested
    class BoundedByBytesAndByScope {

        @Test
        void atTheByteBoundANewKeyIsRefusedAndStoredKeysStillReplay() {
            InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().clock(clock).maxBytes(4096)
                    .scopeSharePercent(100).build();
            IdempotencyKey big = key("big");
            ClaimRequest first = request(big);
            store.tryClaim(first);
            StoredResponse large = StoredResponse.of(200, new byte[3500]);
            assertThat(store.complete(big, first.token(), large, RETENTION)).isEqualTo(FencedWrite.COMMITTED);

            assertThatThrownBy(() -> store.tryClaim(request(key("next"))))
                    .isInstanceOfSatisfying(StoreUnavailableException.class,
                            e -> assertThat(e.isUnreachable()).as("full, not unreachable").isFalse())
                    .hasMessageContaining("maxBytes=4096");
            assertThat(store.tryClaim(request(big))).isEqualTo(new ClaimResult.Replay(large));
        }

        @Test
        void oneScopeCannotTakeTheWholeStore() {
            InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().clock(clock).maxEntries(4)
                    .scopeSharePercent(50).build();
            claimed(store.tryClaim(request(key("a"))));
            claimed(store.tryClaim(request(key("b"))));

            assertThatThrownBy(() -> store.tryClaim(request(key("c")))).isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("(50%)");
            claimed(store.tryClaim(request(IdempotencyKey.of("another-" + scope, "c"))));
            assertThat(store.size()).isEqualTo(3);
        }

        @Test
        void purgingExpiredRecordsGivesTheirBytesAndTheirScopesShareBack() {
            InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().clock(clock).maxEntries(2)
                    .scopeSharePercent(50).build();
            claimed(store.tryClaim(request(key("a"))));
            assertThatThrownBy(() -> store.tryClaim(request(key("b")))).isInstanceOf(StoreUnavailableException.class);

            clock.advance(RETENTION);

            claimed(store.tryClaim(request(key("b"))));
            assertThat(store.size()).isEqualTo(1);
            assertThat(store.bytes()).isPositive();
        }

        @Test
        void theBuilderChecksItsArguments() {
            assertThatThrownBy(() -> InMemoryIdempotencyStore.builder().maxBytes(10))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("maxBytes must be at least 1024, but was 10");
            assertThatThrownBy(() -> InMemoryIdempotencyStore.builder().scopeSharePercent(0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was 0");
            assertThatThrownBy(() -> InMemoryIdempotencyStore.builder().maxEntries(3).maxEntries(4))
                    .isInstanceOf(IllegalStateException.class);
        }
    }
}
