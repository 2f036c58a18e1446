package io.retrysafe.micrometer;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.Attempt;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.Outcome.Completion;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
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

/**
 * Drives a real engine on the real in-memory store and reads the meters a user's dashboard would
 * read. After every test, no tag value of any meter may contain a key, a scope or a fingerprint used.
 */
class MicrometerRetrySafeListenerTest {
    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final String ENGINE = "payments";
    private static final String SCOPE = "tenant-7:create-payment";
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments amount=100".getBytes(UTF_8));
    private static final Fingerprint OTHER_REQUEST = Fingerprint.sha256("POST /payments amount=999".getBytes(UTF_8));
    private static final List<String> OUTCOMES = List.of("executed", "replayed", "in_progress", "mismatch",
            "invalid_key", "missing_key", "store_error", "unprotected");

    /** An HTTP-like result, so that the default outcome policy can store or release it. */
    record Reply(int status, String body) {
    }

    static final ResponseCodec<Reply> REPLY = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(Reply result) {
            return StoredResponse.of(result.status(), result.body().getBytes(UTF_8));
        }

        @Override
        public Reply decode(StoredResponse stored) {
            return new Reply(stored.status(), new String(stored.body(), UTF_8));
        }
    };

    private final TestClock clock = new TestClock(Instant.parse("2026-03-01T10:00:00Z"));
    private final InMemoryIdempotencyStore memory = new InMemoryIdempotencyStore(clock, 1_000);
    private final FaultInjectingStore store = new FaultInjectingStore(memory);
    private final List<MeterRegistry> registries = new ArrayList<>();
    private final MeterRegistry registry = newRegistry();
    private final MicrometerRetrySafeListener metrics = MicrometerRetrySafeListener.builder(registry, ENGINE)
            .tags(Tags.of("region", "eu-1"))
            .build();
    private final RetrySafe engine = RetrySafe.builder(store).name(ENGINE).listener(metrics).build();
    /** Every key value, scope and fingerprint a test used: none may appear in a tag. */
    private final List<String> secrets = new ArrayList<>(List.of(SCOPE, REQUEST.hex(), OTHER_REQUEST.hex()));
    private final AtomicInteger runs = new AtomicInteger();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        pool.shutdownNow();
    }

    @AfterEach
    void noTagCarriesAKeyAScopeOrAFingerprint() {
        for (MeterRegistry r : registries) {
            for (Meter meter : r.getMeters()) {
                for (Tag tag : meter.getId().getTags()) {
                    for (String secret : secrets) {
                        assertThat(tag.getValue()).as("tag %s of %s", tag.getKey(), meter.getId().getName())
                                .doesNotContain(secret);
                    }
                }
            }
        }
    }

    private MeterRegistry newRegistry() {
        MeterRegistry r = new SimpleMeterRegistry();
        registries.add(r);
        return r;
    }

    private IdempotencyKey newKey() {
        String value = "key-" + UUID.randomUUID();
        secrets.add(value);
        return IdempotencyKey.of(SCOPE, value);
    }

    private Outcome<Reply> execute(RetrySafe retrySafe, IdempotencyKey key, Fingerprint fingerprint, Reply reply) {
        return retrySafe.execute(key, fingerprint, REPLY, attempt -> {
            runs.incrementAndGet();
            return reply;
        });
    }

    private double requests(String outcome) {
        return registry.get(MicrometerRetrySafeListener.REQUESTS).tag("outcome", outcome).counter().count();
    }

    /** Every outcome counter: the ones named have the given counts, all others are still 0. */
    private void assertRequests(Map<String, Integer> expected) {
        Map<String, Double> actual = new HashMap<>();
        Map<String, Double> wanted = new HashMap<>();
        for (String outcome : OUTCOMES) {
            actual.put(outcome, requests(outcome));
            wanted.put(outcome, expected.getOrDefault(outcome, 0).doubleValue());
        }
        assertThat(actual).as("retrysafe.requests by outcome").isEqualTo(wanted);
    }

    private double completions(String completion) {
        return registry.get(MicrometerRetrySafeListener.COMPLETIONS).tag("completion", completion).counter().count();
    }

    private double counter(String name) {
        return registry.get(name).counter().count();
    }

    private Timer latency(String storeName, String operation) {
        return registry.get(MicrometerRetrySafeListener.STORE_LATENCY).tags("store", storeName, "operation", operation)
                .timer();
    }

    private double storeErrors(String storeName, String operation) {
        Counter errors = registry.find(MicrometerRetrySafeListener.STORE_ERRORS)
                .tags("store", storeName, "operation", operation).counter();
        return errors == null ? 0 : errors.count();
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
    class Registration {

        @Test
        void outcomeAndCompletionCountersExistAtZeroBeforeAnyRequest() {
            assertThat(registry.find(MicrometerRetrySafeListener.REQUESTS).counters())
                    .extracting(c -> c.getId().getTag("outcome"))
                    .containsExactlyInAnyOrderElementsOf(OUTCOMES);
            assertThat(registry.find(MicrometerRetrySafeListener.COMPLETIONS).counters())
                    .extracting(c -> c.getId().getTag("completion"))
                    .containsExactlyInAnyOrder("stored", "released", "lease_lost");
            assertRequests(Map.of());
            assertThat(counter(MicrometerRetrySafeListener.TAKEOVERS)).isZero();
            assertThat(counter(MicrometerRetrySafeListener.LEASE_LOST)).isZero();
            assertThat(counter(MicrometerRetrySafeListener.PURGE_DELETED)).isZero();
            assertThat(registry.find(MicrometerRetrySafeListener.STORE_LATENCY).timers())
                    .as("store meters wait for the store's name").isEmpty();
        }

        @Test
        void everyMeterCarriesTheEngineNameTheDefaultSourceAndTheExtraTags() {
            execute(engine, newKey(), REQUEST, new Reply(201, "created"));
            store.failClaims(new IllegalStateException("connection refused"));
            execute(engine, newKey(), REQUEST, new Reply(201, "created"));

            assertThat(registry.getMeters()).hasSizeGreaterThan(OUTCOMES.size())
                    .allSatisfy(meter -> assertThat(meter.getId().getTags()).contains(
                            Tag.of("name", ENGINE), Tag.of("source", "http"), Tag.of("region", "eu-1")));
            assertThat(metrics.commonTags()).containsExactlyInAnyOrder(
                    Tag.of("name", ENGINE), Tag.of("source", "http"), Tag.of("region", "eu-1"));
        }

        @Test
        void aMessagingAdapterSetsItsSource() {
            MeterRegistry kafkaRegistry = newRegistry();
            MicrometerRetrySafeListener kafka = MicrometerRetrySafeListener.builder(kafkaRegistry, "orders")
                    .source("kafka").build();
            RetrySafe consumer = RetrySafe.builder(store).name("orders").listener(kafka).build();

            execute(consumer, newKey(), REQUEST, new Reply(200, "processed"));

            assertThat(kafkaRegistry.get(MicrometerRetrySafeListener.REQUESTS)
                    .tags("name", "orders", "source", "kafka", "outcome", "executed").counter().count()).isEqualTo(1);
            assertThat(kafkaRegistry.getMeters()).allSatisfy(
                    meter -> assertThat(meter.getId().getTag("source")).isEqualTo("kafka"));
        }

        @Test
        void manyKeysAddNoMeters() {
            execute(engine, newKey(), REQUEST, new Reply(201, "first"));
            List<Meter.Id> before = registry.getMeters().stream().map(Meter::getId).toList();

            for (int i = 0; i < 50; i++) {
                IdempotencyKey key = newKey();
                execute(engine, key, REQUEST, new Reply(201, "created"));
                execute(engine, key, REQUEST, new Reply(201, "created"));
            }

            assertThat(registry.getMeters()).extracting(Meter::getId).containsExactlyInAnyOrderElementsOf(before);
            assertRequests(Map.of("executed", 51, "replayed", 50));
        }
    }

    @Nested
    class Requests {

        @Test
        void executedThenReplayed() {
            IdempotencyKey key = newKey();

            Outcome<Reply> first = execute(engine, key, REQUEST, new Reply(201, "created"));
            Outcome<Reply> retry = execute(engine, key, REQUEST, new Reply(201, "again"));

            assertThat(first).isEqualTo(new Outcome.Executed<>(new Reply(201, "created"), new Attempt(key, 1),
                    Completion.STORED));
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(new Reply(201, "created")));
            assertRequests(Map.of("executed", 1, "replayed", 1));
            assertThat(completions("stored")).isEqualTo(1);
            assertThat(completions("released")).isZero();
            assertThat(latency("memory", "claim").count()).isEqualTo(2);
            assertThat(latency("memory", "complete").count()).isEqualTo(1);
            assertThat(storeErrors("memory", "claim")).isZero();
            assertThat(counter(MicrometerRetrySafeListener.TAKEOVERS)).isZero();
        }

        @Test
        void aReleasedResultIsCountedAsReleasedAndItsRetryAsATakeover() {
            IdempotencyKey key = newKey();

            execute(engine, key, REQUEST, new Reply(503, "upstream down"));
            Outcome<Reply> retry = execute(engine, key, REQUEST, new Reply(201, "created"));

            assertThat(retry).isEqualTo(new Outcome.Executed<>(new Reply(201, "created"), new Attempt(key, 2),
                    Completion.STORED));
            assertRequests(Map.of("executed", 2));
            assertThat(completions("released")).isEqualTo(1);
            assertThat(completions("stored")).isEqualTo(1);
            assertThat(latency("memory", "release").count()).isEqualTo(1);
            assertThat(counter(MicrometerRetrySafeListener.TAKEOVERS)).isEqualTo(1);
        }

        @Test
        void aDuplicateWhileTheFirstRunsIsInProgress() throws Exception {
            IdempotencyKey key = newKey();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> engine.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(201, "first");
            }));
            awaitLatch(inside, "the first attempt to start");

            Outcome<Reply> duplicate = execute(engine, key, REQUEST, new Reply(201, "duplicate"));
            assertRequests(Map.of("in_progress", 1));
            finish.countDown();
            get(first);

            assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
            assertThat(runs).hasValue(0);
            assertRequests(Map.of("in_progress", 1, "executed", 1));
        }

        @Test
        void theSameKeyWithAnotherRequestIsAMismatch() {
            IdempotencyKey key = newKey();

            execute(engine, key, REQUEST, new Reply(201, "created"));
            Outcome<Reply> other = execute(engine, key, OTHER_REQUEST, new Reply(201, "other"));

            assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
            assertThat(runs).hasValue(1);
            assertRequests(Map.of("executed", 1, "mismatch", 1));
        }

        @Test
        void missingAndInvalidKeysReportedByAnAdapter() {
            RetrySafeListenerCalls.refuse(engine, () -> KeyRules.DEFAULT.parseHeader(List.of()));
            String tooLong = "k".repeat(KeyRules.MAX_LENGTH + 1);
            secrets.add(tooLong);
            RetrySafeListenerCalls.refuse(engine, () -> KeyRules.DEFAULT.parseHeader(tooLong));
            RetrySafeListenerCalls.refuse(engine, () -> KeyRules.DEFAULT.parseHeader(List.of("a", "b")));
            engine.listener().onInvalidKey(new InvalidKeyException(InvalidKeyException.Rule.MISSING,
                    "message id header is missing"));
            engine.listener().onInvalidKey(new InvalidKeyException(InvalidKeyException.Rule.MALFORMED,
                    "Idempotency-Key string has no closing quote"));

            assertRequests(Map.of("missing_key", 2, "invalid_key", 3));
        }
    }

    @Nested
    class StoreFailures {

        @Test
        void aFailedClaimIsAStoreErrorAndTheOperationDoesNotRun() {
            store.failClaims(new IllegalStateException("connection refused"));

            Outcome<Reply> outcome = execute(engine, newKey(), REQUEST, new Reply(201, "created"));

            assertThat(outcome).isInstanceOf(Outcome.StoreUnavailable.class);
            assertThat(runs).hasValue(0);
            assertRequests(Map.of("store_error", 1));
            assertThat(storeErrors("memory", "claim")).isEqualTo(1);
            assertThat(latency("memory", "claim").count()).as("failed calls are timed too").isEqualTo(1);
        }

        @Test
        void aFailedCompletionIsAStoreErrorButNoRequestOutcome() {
            store.failCompletions(new IllegalStateException("connection reset"));

            assertThatThrownBy(() -> execute(engine, newKey(), REQUEST, new Reply(201, "created")))
                    .isInstanceOf(OutcomeUnknownException.class);

            assertThat(runs).hasValue(1);
            // Standalone: the engine writes a failed completion again before it gives up; each write is counted.
            assertThat(storeErrors("memory", "complete")).isEqualTo(RetrySafe.DEFAULT_COMPLETION_ATTEMPTS);
            assertThat(storeErrors("memory", "claim")).isZero();
            // execute threw instead of returning an outcome, so the engine reports none.
            assertRequests(Map.of());
            assertThat(completions("stored")).isZero();
        }

        @Test
        void failOpenRunsUnprotected() {
            RetrySafe failOpen = RetrySafe.builder(store).name(ENGINE).listener(metrics).failOpen(true).build();
            store.failClaims(new StoreUnavailableException("faulty", null, "connection refused", null));

            Outcome<Reply> outcome = execute(failOpen, newKey(), REQUEST, new Reply(201, "created"));

            assertThat(outcome).isInstanceOf(Outcome.Unprotected.class);
            assertThat(runs).hasValue(1);
            assertRequests(Map.of("unprotected", 1));
            assertThat(storeErrors("memory", "claim")).isEqualTo(1);
        }
    }

    @Nested
    class Leases {

        @Test
        void anExpiredLeaseIsTakenOverAndTheLateCompletionIsCountedAsLost() throws Exception {
            RetrySafe shortLease = engine.with(OperationPolicy.custom().leaseTtl(Duration.ofSeconds(1)).build());
            IdempotencyKey key = newKey();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            Future<Outcome<Reply>> first = pool.submit(() -> shortLease.execute(key, REQUEST, REPLY, attempt -> {
                inside.countDown();
                awaitLatch(finish, "the test to let the first attempt finish");
                return new Reply(201, "first");
            }));
            awaitLatch(inside, "the first attempt to start");
            clock.advance(Duration.ofSeconds(2));

            Outcome<Reply> second = execute(shortLease, key, REQUEST, new Reply(201, "second"));
            finish.countDown();
            Outcome<Reply> late = get(first);

            assertThat(second).isEqualTo(new Outcome.Executed<>(new Reply(201, "second"), new Attempt(key, 2),
                    Completion.STORED));
            assertThat(late).isEqualTo(new Outcome.Executed<>(new Reply(201, "first"), new Attempt(key, 1),
                    Completion.LEASE_LOST));
            assertThat(counter(MicrometerRetrySafeListener.TAKEOVERS)).isEqualTo(1);
            assertThat(counter(MicrometerRetrySafeListener.LEASE_LOST)).isEqualTo(1);
            assertThat(completions("stored")).isEqualTo(1);
            assertThat(completions("lease_lost")).isEqualTo(1);
            assertRequests(Map.of("executed", 2));
        }
    }

    @Nested
    class Purge {

        @Test
        void deletedRecordsReportedByThePurgeJobAreCounted() {
            RetrySafe shortRetention = engine.with(OperationPolicy.custom().leaseTtl(Duration.ofSeconds(10))
                    .retention(Duration.ofMinutes(1)).build());
            execute(shortRetention, newKey(), REQUEST, new Reply(201, "a"));
            execute(shortRetention, newKey(), REQUEST, new Reply(201, "b"));
            clock.advance(Duration.ofMinutes(2));

            int deleted = memory.purgeExpired(100);
            metrics.recordPurge(deleted, true);
            metrics.recordPurge(0, true);

            assertThat(deleted).isEqualTo(2);
            assertThat(counter(MicrometerRetrySafeListener.PURGE_DELETED)).isEqualTo(2);
            assertThat(purgeRuns("true")).isEqualTo(2);
            assertThat(purgeRuns("false")).isZero();
        }

        @Test
        void aRunThatLeftExpiredRecordsBehindIsCountedApartSoThatAnAlertCanSeeThePurgeFallBehind() {
            metrics.recordPurge(1_000, false);
            metrics.recordPurge(1_000, false);
            metrics.recordPurge(40, true);

            assertThat(counter(MicrometerRetrySafeListener.PURGE_DELETED)).isEqualTo(2_040);
            assertThat(purgeRuns("false")).isEqualTo(2);
            assertThat(purgeRuns("true")).isEqualTo(1);
            assertThat(registry.get(MicrometerRetrySafeListener.PURGE_RUNS).tags(metrics.commonTags()).counters())
                    .as("every run under the engine's tags, one series each way").hasSize(2);
        }

        private double purgeRuns(String finished) {
            return registry.get(MicrometerRetrySafeListener.PURGE_RUNS).tag("finished", finished).counter().count();
        }

        @Test
        void partitionMaintenanceRunsAreCountedAndTheLastOneIsShown() {
            MockClock wall = new MockClock();
            MeterRegistry r = new SimpleMeterRegistry(SimpleConfig.DEFAULT, wall);
            registries.add(r);
            MicrometerRetrySafeListener partitioned = MicrometerRetrySafeListener.of(r, ENGINE);
            assertThat(r.find(MicrometerRetrySafeListener.PARTITIONS_DEFAULT_ROWS).gauge())
                    .as("no partition meter before a maintenance run: a standard table has none").isNull();

            wall.add(Duration.ofSeconds(1_800_000_000L).minusMillis(wall.wallTime()));
            partitioned.recordPartitionMaintenance(8, 0, 0, 12);
            wall.add(Duration.ofDays(1));
            partitioned.recordPartitionMaintenance(1, 1, 2, 0);

            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_CREATED).counter().count()).isEqualTo(9);
            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_DROPPED).counter().count()).isEqualTo(1);
            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_FAILED).counter().count()).isEqualTo(2);
            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_DEFAULT_ROWS).gauge().value())
                    .as("the last run's count, not a sum").isZero();
            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_LAST_RUN).gauge().value())
                    .isEqualTo(1_800_000_000d + 86_400);
            assertThat(r.get(MicrometerRetrySafeListener.PARTITIONS_LAST_RUN).gauge().getId().getTag("name"))
                    .isEqualTo(ENGINE);
        }

        @Test
        void aNegativePartitionCountIsRefusedAndNothingIsRecorded() {
            assertThatThrownBy(() -> metrics.recordPartitionMaintenance(1, -1, 0, 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("counts must not be negative, but were created 1, dropped -1, failed 0,"
                            + " defaultPartitionRows 0");
            assertThat(registry.find(MicrometerRetrySafeListener.PARTITIONS_CREATED).counter()).isNull();
        }

        @Test
        void aNegativeCountIsRefused() {
            assertThatThrownBy(() -> metrics.recordPurge(-1, true))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("deleted must not be negative, but was -1");
            assertThat(counter(MicrometerRetrySafeListener.PURGE_DELETED)).isZero();
            assertThat(purgeRuns("true") + purgeRuns("false")).as("nor counted as a run").isZero();
        }
    }

    @Nested
    class Histogram {

        /**
         * What each timer asked the registry for. A SimpleMeterRegistry keeps no percentile buckets
         * (it has no aggregable percentiles), so the request is read where every registry sees it: a
         * meter filter.
         */
        private final Map<String, Boolean> percentileHistogram = new ConcurrentHashMap<>();

        private MeterRegistry registryRecordingHistogramRequests() {
            MeterRegistry r = newRegistry();
            r.config().meterFilter(new MeterFilter() {
                @Override
                public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                    if (id.getName().equals(MicrometerRetrySafeListener.STORE_LATENCY)) {
                        percentileHistogram.put(id.getTag("operation"),
                                Boolean.TRUE.equals(config.isPercentileHistogram()));
                    }
                    return config;
                }
            });
            return r;
        }

        @Test
        void latencyHasNoPercentileHistogramByDefault() {
            MicrometerRetrySafeListener plain =
                    MicrometerRetrySafeListener.of(registryRecordingHistogramRequests(), ENGINE);

            execute(RetrySafe.builder(store).name(ENGINE).listener(plain).build(), newKey(), REQUEST,
                    new Reply(201, "created"));

            assertThat(plain.publishPercentileHistogram()).isFalse();
            assertThat(percentileHistogram).containsOnly(Map.entry("claim", false), Map.entry("complete", false));
        }

        @Test
        void latencyPublishesAPercentileHistogramWhenAsked() {
            MeterRegistry histogramRegistry = registryRecordingHistogramRequests();
            MicrometerRetrySafeListener withHistogram = MicrometerRetrySafeListener.builder(histogramRegistry, ENGINE)
                    .publishPercentileHistogram(true).build();

            execute(RetrySafe.builder(store).name(ENGINE).listener(withHistogram).build(), newKey(), REQUEST,
                    new Reply(201, "created"));

            assertThat(withHistogram.publishPercentileHistogram()).isTrue();
            assertThat(percentileHistogram).containsOnly(Map.entry("claim", true), Map.entry("complete", true));
            assertThat(histogramRegistry.get(MicrometerRetrySafeListener.STORE_LATENCY)
                    .tags("store", "memory", "operation", "claim").timer().count()).isEqualTo(1);
        }
    }

    @Nested
    class Configuration {

        @Test
        void extraTagsMayNotUseAReservedKey() {
            MicrometerRetrySafeListener.Builder builder = MicrometerRetrySafeListener.builder(newRegistry(), ENGINE);

            assertThatThrownBy(() -> builder.tags(Tags.of("outcome", "x")))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("tags must not use the keys [completion, finished, name, operation, outcome, ran,"
                            + " source, store], which the listener sets itself, but had tag(outcome=x)");
        }

        @Test
        void aValueSetTwiceIsAnError() {
            MicrometerRetrySafeListener.Builder builder = MicrometerRetrySafeListener.builder(newRegistry(), ENGINE)
                    .source("kafka");

            assertThatThrownBy(() -> builder.source("nats"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("source was already set to kafka");
        }

        @Test
        void nameAndSourceMustNotBeBlank() {
            assertThatThrownBy(() -> MicrometerRetrySafeListener.builder(newRegistry(), " "))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("name must not be blank, but was \" \"");
            assertThatThrownBy(() -> MicrometerRetrySafeListener.builder(newRegistry(), ENGINE).source(""))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("source must not be blank, but was \"\"");
            assertThatThrownBy(() -> MicrometerRetrySafeListener.of(null, ENGINE))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessage("registry must not be null");
        }
    }

    /** What an HTTP or messaging adapter does with a key it refuses: report it through the engine's listener. */
    static final class RetrySafeListenerCalls {
        private RetrySafeListenerCalls() {
        }

        static void refuse(RetrySafe engine, Runnable parse) {
            try {
                parse.run();
            } catch (InvalidKeyException e) {
                engine.listener().onInvalidKey(e);
                return;
            }
            throw new AssertionError("the key was accepted");
        }
    }

    /**
     * Fault injection around a real store: a call throws the failure set for it, before reaching the
     * delegate; otherwise it goes to the delegate. Keeps the delegate's name, so meters are tagged as
     * in production.
     */
    static final class FaultInjectingStore implements IdempotencyStore {
        private final IdempotencyStore delegate;
        private final AtomicReference<RuntimeException> claimFailure = new AtomicReference<>();
        private final AtomicReference<RuntimeException> completeFailure = new AtomicReference<>();

        FaultInjectingStore(IdempotencyStore delegate) {
            this.delegate = delegate;
        }

        void failClaims(RuntimeException failure) {
            claimFailure.set(failure);
        }

        void failCompletions(RuntimeException failure) {
            completeFailure.set(failure);
        }

        @Override
        public ClaimResult tryClaim(ClaimRequest request) {
            throwIfSet(claimFailure);
            return delegate.tryClaim(request);
        }

        @Override
        public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
            throwIfSet(completeFailure);
            return delegate.complete(key, token, response, retention);
        }

        @Override
        public FencedWrite release(IdempotencyKey key, OwnerToken token) {
            return delegate.release(key, token);
        }

        @Override
        public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
            return delegate.inspect(key);
        }

        @Override
        public int purgeExpired(int limit) {
            return delegate.purgeExpired(limit);
        }

        @Override
        public String name() {
            return delegate.name();
        }

        private static void throwIfSet(AtomicReference<RuntimeException> failure) {
            RuntimeException e = failure.get();
            if (e != null) {
                throw e;
            }
        }
    }

    /** The store's clock: stands still until a test moves it, so leases and expiry are decided by the test. */
    static final class TestClock extends Clock {
        private final AtomicReference<Instant> now;

        TestClock(Instant start) {
            this.now = new AtomicReference<>(start);
        }

        void advance(Duration step) {
            now.updateAndGet(t -> t.plus(step));
        }

        @Override
        public Instant instant() {
            return now.get();
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("a test clock has one zone, UTC");
        }
    }
}
