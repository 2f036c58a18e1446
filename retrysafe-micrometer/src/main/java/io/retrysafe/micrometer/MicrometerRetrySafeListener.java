package io.retrysafe.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Outcome;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Publishes what a {@link io.retrysafe.RetrySafe} engine does as Micrometer meters.
 *
 * <pre>{@code
 * MicrometerRetrySafeListener metrics = MicrometerRetrySafeListener.builder(meterRegistry, "payments").build();
 * RetrySafe retrySafe = RetrySafe.builder(store).name("payments").listener(metrics).build();
 * // the purge job reports what it deleted:
 * PurgeResult run = purger.purge();
 * metrics.recordPurge(run.deleted(), run.finished());
 * }</pre>
 *
 * <p>Every meter carries the common tags {@code name} (the engine's name), {@code source}
 * ({@value #DEFAULT_SOURCE} by default; messaging adapters pass {@code kafka} or {@code nats}) and
 * the extra tags given to the builder, plus the tags below:
 *
 * <table class="striped">
 * <caption>Meters</caption>
 * <thead>
 * <tr><th scope="col">meter</th><th scope="col">type</th><th scope="col">tags</th><th scope="col">counts</th></tr>
 * </thead>
 * <tbody>
 * <tr><td>{@value #REQUESTS}</td><td>counter</td><td>{@code outcome}: {@code executed}, {@code replayed},
 *     {@code in_progress}, {@code mismatch}, {@code invalid_key}, {@code missing_key}, {@code store_error},
 *     {@code unprotected}</td>
 *     <td>one per request: each {@code execute} that returned an outcome, and each key an adapter refused
 *     before the engine ({@code missing_key} when the key was absent, {@code invalid_key} when it broke
 *     another rule)</td></tr>
 * <tr><td>{@value #COMPLETIONS}</td><td>counter</td><td>{@code completion}: {@code stored}, {@code released},
 *     {@code lease_lost}</td>
 *     <td>what became of each {@code executed} request's result</td></tr>
 * <tr><td>{@value #TAKEOVERS}</td><td>counter</td><td></td>
 *     <td>claims that ran a key again after a released attempt or an expired lease</td></tr>
 * <tr><td>{@value #LEASE_LOST}</td><td>counter</td><td></td>
 *     <td>completions refused because another attempt had taken the key over</td></tr>
 * <tr><td>{@value #STORE_ERRORS}</td><td>counter</td><td>{@code store}, {@code operation}
 *     ({@code claim}, {@code complete}, {@code release})</td>
 *     <td>store calls that threw</td></tr>
 * <tr><td>{@value #STORE_LATENCY}</td><td>timer</td><td>{@code store}, {@code operation}</td>
 *     <td>duration of every store call, failed ones included; a percentile histogram only if
 *     {@link Builder#publishPercentileHistogram(boolean)} is set</td></tr>
 * <tr><td>{@value #PURGE_DELETED}</td><td>counter</td><td></td>
 *     <td>expired records deleted, as reported through {@link #recordPurge(long, boolean)}</td></tr>
 * <tr><td>{@value #PURGE_RUNS}</td><td>counter</td><td>{@code finished}: {@code true}, or {@code false} when the
 *     run stopped with expired records left (at its batch limit, or interrupted)</td>
 *     <td>purge runs that ran, as reported through {@link #recordPurge(long, boolean)}: alert when every run is
 *     unfinished, which means records expire faster than the purge deletes them</td></tr>
 * <tr><td>{@value #PARTITIONS_CREATED}, {@value #PARTITIONS_DROPPED}, {@value #PARTITIONS_FAILED}</td>
 *     <td>counter</td><td></td>
 *     <td>day partitions created, dropped, and not created or dropped (the next run tries again), as
 *     reported through {@link #recordPartitionMaintenance}</td></tr>
 * <tr><td>{@value #PARTITIONS_DEFAULT_ROWS}</td><td>gauge</td><td></td>
 *     <td>rows left in the default partition after the last maintenance run: zero when the job keeps up</td></tr>
 * <tr><td>{@value #PARTITIONS_LAST_RUN}</td><td>gauge (seconds)</td><td></td>
 *     <td>when the last maintenance run ended, in seconds since the epoch: alert when it is older than a day</td></tr>
 * <tr><td>{@value #COMPLETER_RUNS}</td><td>counter</td><td>{@code ran}: {@code true}, or {@code false} when
 *     another instance held the completer's lock</td>
 *     <td>runs of the phased operations' completer</td></tr>
 * <tr><td>{@value #COMPLETER_OPERATIONS}</td><td>counter</td><td>{@code outcome}: {@code forwarded},
 *     {@code compensated}, {@code failed}, {@code taken}</td>
 *     <td>abandoned operations the completer drove to their end, forward or to their compensating end; failed
 *     both ways (tried again on a later run); or found held or ended by a retry first</td></tr>
 * <tr><td>{@value #COMPLETER_BACKLOG}</td><td>gauge</td><td></td>
 *     <td>abandoned operations waiting for the completer, as reported through {@link #recordCompleterBacklog(long)}:
 *     zero when it keeps up</td></tr>
 * </tbody>
 * </table>
 *
 * <p><b>Cardinality.</b> No meter is ever tagged with an idempotency key, a scope or a fingerprint:
 * they are unbounded (one per request) and keys are bearer-like secrets. Every tag value comes from
 * a closed set above, from the configuration, or from the store's {@link
 * io.retrysafe.spi.IdempotencyStore#name() name}. The {@code requests}, {@code completions},
 * {@code takeovers}, {@code lease.lost} and {@code purge.deleted} counters are registered when the
 * listener is built, so dashboards show zeros rather than gaps; the store meters appear with the
 * first store call, since only then is the store's name known, and the partition meters with the
 * first maintenance run, since only a partitioned table has them.
 *
 * <p>Meters are created once and held, so the hot path does no registry lookup. Two listeners with
 * the same registry, name, source and tags share their meters (the registry's rule); the first one's
 * histogram setting wins. Thread-safe.
 */
public final class MicrometerRetrySafeListener implements RetrySafeListener {
    public static final String DEFAULT_SOURCE = "http";
    public static final boolean DEFAULT_PUBLISH_PERCENTILE_HISTOGRAM = false;

    public static final String REQUESTS = "retrysafe.requests";
    public static final String COMPLETIONS = "retrysafe.completions";
    public static final String TAKEOVERS = "retrysafe.takeovers";
    public static final String LEASE_LOST = "retrysafe.lease.lost";
    public static final String STORE_ERRORS = "retrysafe.store.errors";
    public static final String STORE_LATENCY = "retrysafe.store.latency";
    public static final String PURGE_DELETED = "retrysafe.purge.deleted";
    public static final String PURGE_RUNS = "retrysafe.purge.runs";
    public static final String PARTITIONS_CREATED = "retrysafe.partitions.created";
    public static final String PARTITIONS_DROPPED = "retrysafe.partitions.dropped";
    public static final String PARTITIONS_FAILED = "retrysafe.partitions.failed";
    public static final String PARTITIONS_DEFAULT_ROWS = "retrysafe.partitions.default.rows";
    public static final String PARTITIONS_LAST_RUN = "retrysafe.partitions.last.run";
    public static final String COMPLETER_RUNS = "retrysafe.completer.runs";
    public static final String COMPLETER_OPERATIONS = "retrysafe.completer.operations";
    public static final String COMPLETER_BACKLOG = "retrysafe.completer.backlog";

    /** Tag keys this listener sets itself; the builder's extra tags may not use them. */
    public static final Set<String> RESERVED_TAG_KEYS = Set.of("name", "source", "outcome", "completion", "store",
            "operation", "ran", "finished");

    private static final String UNKNOWN_STORE = "unknown";

    /** The values of the {@code outcome} tag of {@value #REQUESTS}. */
    private enum RequestOutcome {
        EXECUTED, REPLAYED, IN_PROGRESS, MISMATCH, INVALID_KEY, MISSING_KEY, STORE_ERROR, UNPROTECTED;

        String tagValue() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final MeterRegistry registry;
    private final Tags commonTags;
    private final boolean publishPercentileHistogram;
    private final Map<RequestOutcome, Counter> requests = new EnumMap<>(RequestOutcome.class);
    private final Map<Outcome.Completion, Counter> completions = new EnumMap<>(Outcome.Completion.class);
    private final Counter takeovers;
    private final Counter leaseLost;
    private final Counter purgeDeleted;
    private final Counter purgeFinished;
    private final Counter purgeUnfinished;
    private volatile PartitionMeters partitionMeters;
    private volatile CompleterMeters completerMeters;
    /** Store name → operation → meters; bounded by the stores and operations the engine has. */
    private final Map<String, Map<String, StoreMeters>> storeMeters = new ConcurrentHashMap<>();

    private record StoreMeters(Counter errors, Timer latency) {
    }

    private record PartitionMeters(Counter created, Counter dropped, Counter failed, AtomicLong defaultRows,
            AtomicLong lastRunSeconds) {
    }

    private MicrometerRetrySafeListener(Builder b) {
        this.registry = b.registry;
        this.commonTags = Tags.of("name", b.name, "source", b.source == null ? DEFAULT_SOURCE : b.source)
                .and(b.tags == null ? Tags.empty() : b.tags);
        this.publishPercentileHistogram = b.publishPercentileHistogram == null ? DEFAULT_PUBLISH_PERCENTILE_HISTOGRAM
                : b.publishPercentileHistogram;
        for (RequestOutcome outcome : RequestOutcome.values()) {
            requests.put(outcome, Counter.builder(REQUESTS)
                    .description("Idempotent requests, by what the engine or an adapter decided")
                    .tags(commonTags).tag("outcome", outcome.tagValue())
                    .register(registry));
        }
        for (Outcome.Completion completion : Outcome.Completion.values()) {
            completions.put(completion, Counter.builder(COMPLETIONS)
                    .description("What became of the result of an attempt that ran the operation")
                    .tags(commonTags).tag("completion", completion.name().toLowerCase(Locale.ROOT))
                    .register(registry));
        }
        this.takeovers = Counter.builder(TAKEOVERS)
                .description("Claims that ran a key again after a released attempt or an expired lease")
                .tags(commonTags).register(registry);
        this.leaseLost = Counter.builder(LEASE_LOST)
                .description("Completions refused because another attempt had taken the key over")
                .tags(commonTags).register(registry);
        this.purgeDeleted = Counter.builder(PURGE_DELETED)
                .description("Expired idempotency records deleted by the purge job")
                .tags(commonTags).register(registry);
        this.purgeFinished = purgeRuns("true");
        this.purgeUnfinished = purgeRuns("false");
    }

    /** A listener with the defaults: source {@value #DEFAULT_SOURCE}, no extra tags, no histogram. */
    public static MicrometerRetrySafeListener of(MeterRegistry registry, String name) {
        return builder(registry, name).build();
    }

    /**
     * @param name the engine's name, the {@code name} tag of every meter; use the one given to
     *     {@link io.retrysafe.RetrySafe.Builder#name(String)}
     */
    public static Builder builder(MeterRegistry registry, String name) {
        return new Builder(registry, name);
    }

    /** The tags every meter of this listener carries: {@code name}, {@code source} and the extra tags. */
    public Tags commonTags() {
        return commonTags;
    }

    public boolean publishPercentileHistogram() {
        return publishPercentileHistogram;
    }

    @Override
    public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
        if (outcome instanceof Outcome.Executed<?> executed) {
            requests.get(RequestOutcome.EXECUTED).increment();
            completions.get(executed.completion()).increment();
        } else if (outcome instanceof Outcome.Replayed) {
            requests.get(RequestOutcome.REPLAYED).increment();
        } else if (outcome instanceof Outcome.InProgress) {
            requests.get(RequestOutcome.IN_PROGRESS).increment();
        } else if (outcome instanceof Outcome.FingerprintMismatch) {
            requests.get(RequestOutcome.MISMATCH).increment();
        } else if (outcome instanceof Outcome.StoreUnavailable) {
            requests.get(RequestOutcome.STORE_ERROR).increment();
        } else if (outcome instanceof Outcome.Unprotected) {
            requests.get(RequestOutcome.UNPROTECTED).increment();
        }
    }

    @Override
    public void onInvalidKey(InvalidKeyException error) {
        requests.get(error.rule() == InvalidKeyException.Rule.MISSING ? RequestOutcome.MISSING_KEY
                : RequestOutcome.INVALID_KEY).increment();
    }

    @Override
    public void onTakeover(IdempotencyKey key, int attempt) {
        takeovers.increment();
    }

    @Override
    public void onLeaseLost(IdempotencyKey key) {
        leaseLost.increment();
    }

    @Override
    public void onStoreError(String storeName, String operation, RuntimeException error) {
        storeMeters(storeName, operation).errors().increment();
    }

    @Override
    public void onStoreLatency(String storeName, String operation, long nanos) {
        storeMeters(storeName, operation).latency().record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * Counts one purge run and the records it deleted, for the purge job to call with its result (a run that
     * deleted nothing reports 0); a run skipped because another instance held the lock is not reported.
     *
     * @param finished false when the run stopped with expired records left, at its batch limit or interrupted
     * @throws IllegalArgumentException if {@code deleted} is negative
     */
    public void recordPurge(long deleted, boolean finished) {
        if (deleted < 0) {
            throw new IllegalArgumentException("deleted must not be negative, but was " + deleted);
        }
        purgeDeleted.increment(deleted);
        (finished ? purgeFinished : purgeUnfinished).increment();
    }

    private Counter purgeRuns(String finished) {
        return Counter.builder(PURGE_RUNS).description("Purge runs, by whether they left expired records behind")
                .tags(commonTags).tag("finished", finished).register(registry);
    }

    /**
     * Reports one partition maintenance run of a table partitioned by expiry day, for the job to
     * call with its report ({@code PartitionMaintainer.Report}); a run skipped because another
     * instance held the lock is not reported.
     *
     * @throws IllegalArgumentException if a count is negative
     */
    public void recordPartitionMaintenance(int created, int dropped, int failed, long defaultPartitionRows) {
        if (created < 0 || dropped < 0 || failed < 0 || defaultPartitionRows < 0) {
            throw new IllegalArgumentException("counts must not be negative, but were created " + created + ", dropped "
                    + dropped + ", failed " + failed + ", defaultPartitionRows " + defaultPartitionRows);
        }
        PartitionMeters m = partitionMeters();
        m.created().increment(created);
        m.dropped().increment(dropped);
        m.failed().increment(failed);
        m.defaultRows().set(defaultPartitionRows);
        m.lastRunSeconds().set(registry.config().clock().wallTime() / 1000);
    }

    private PartitionMeters partitionMeters() {
        PartitionMeters m = partitionMeters;
        if (m != null) {
            return m;
        }
        synchronized (this) {
            if (partitionMeters == null) {
                // Gauges hold their numbers weakly: these fields keep them alive.
                AtomicLong defaultRows = new AtomicLong();
                AtomicLong lastRun = new AtomicLong();
                Gauge.builder(PARTITIONS_DEFAULT_ROWS, defaultRows, AtomicLong::doubleValue)
                        .description("Rows left in the default partition after the last partition maintenance")
                        .tags(commonTags).register(registry);
                Gauge.builder(PARTITIONS_LAST_RUN, lastRun, AtomicLong::doubleValue).baseUnit("seconds")
                        .description("When the last partition maintenance ended, in seconds since the epoch")
                        .tags(commonTags).register(registry);
                partitionMeters = new PartitionMeters(
                        Counter.builder(PARTITIONS_CREATED).description("Day partitions created")
                                .tags(commonTags).register(registry),
                        Counter.builder(PARTITIONS_DROPPED).description("Expired day partitions dropped")
                                .tags(commonTags).register(registry),
                        Counter.builder(PARTITIONS_FAILED)
                                .description("Day partitions a maintenance run failed to create or drop")
                                .tags(commonTags).register(registry),
                        defaultRows, lastRun);
            }
            return partitionMeters;
        }
    }

    @Override
    public void onCompleterRun(PhaseCompleter.Run run) {
        CompleterMeters m = completerMeters();
        (run.ran() ? m.ran() : m.skipped()).increment();
        m.forwarded().increment(run.forwarded());
        m.compensated().increment(run.compensated());
        m.failed().increment(run.failed());
        m.taken().increment(run.taken());
    }

    /**
     * Reports how many abandoned phased operations wait for the completer ({@code PhaseCompleter.backlog()}),
     * for the job that schedules it to call after each run.
     *
     * @throws IllegalArgumentException if {@code backlog} is negative
     */
    public void recordCompleterBacklog(long backlog) {
        if (backlog < 0) {
            throw new IllegalArgumentException("backlog must not be negative, but was " + backlog);
        }
        completerMeters().backlog().set(backlog);
    }

    private CompleterMeters completerMeters() {
        CompleterMeters m = completerMeters;
        if (m != null) {
            return m;
        }
        synchronized (this) {
            if (completerMeters == null) {
                AtomicLong backlog = new AtomicLong();
                Gauge.builder(COMPLETER_BACKLOG, backlog, AtomicLong::doubleValue)
                        .description("Abandoned phased operations waiting for the completer")
                        .tags(commonTags).register(registry);
                completerMeters = new CompleterMeters(completerRuns("true"), completerRuns("false"),
                        completerOperations("forwarded"), completerOperations("compensated"),
                        completerOperations("failed"), completerOperations("taken"), backlog);
            }
            return completerMeters;
        }
    }

    private Counter completerRuns(String ran) {
        return Counter.builder(COMPLETER_RUNS).description("Runs of the phased operations' completer")
                .tags(commonTags).tag("ran", ran).register(registry);
    }

    private Counter completerOperations(String outcome) {
        return Counter.builder(COMPLETER_OPERATIONS)
                .description("Abandoned phased operations the completer took up, by how each ended")
                .tags(commonTags).tag("outcome", outcome).register(registry);
    }

    private record CompleterMeters(Counter ran, Counter skipped, Counter forwarded, Counter compensated, Counter failed,
            Counter taken, AtomicLong backlog) {
    }

    private StoreMeters storeMeters(String storeName, String operation) {
        String store = storeName == null || storeName.isEmpty() ? UNKNOWN_STORE : storeName;
        String op = operation == null || operation.isEmpty() ? "unknown" : operation;
        Map<String, StoreMeters> byOperation = storeMeters.get(store);
        if (byOperation == null) {
            byOperation = storeMeters.computeIfAbsent(store, s -> new ConcurrentHashMap<>());
        }
        StoreMeters meters = byOperation.get(op);
        if (meters == null) {
            meters = byOperation.computeIfAbsent(op, o -> newStoreMeters(store, o));
        }
        return meters;
    }

    private StoreMeters newStoreMeters(String store, String operation) {
        Tags tags = commonTags.and("store", store, "operation", operation);
        return new StoreMeters(
                Counter.builder(STORE_ERRORS)
                        .description("Idempotency store calls that failed")
                        .tags(tags).register(registry),
                Timer.builder(STORE_LATENCY)
                        .description("Duration of idempotency store calls, failed ones included")
                        .tags(tags).publishPercentileHistogram(publishPercentileHistogram)
                        .register(registry));
    }

    @Override
    public String toString() {
        return "MicrometerRetrySafeListener[tags=" + commonTags + ", publishPercentileHistogram="
                + publishPercentileHistogram + "]";
    }

    /** Builds a {@link MicrometerRetrySafeListener}; each value may be set once. */
    public static final class Builder {
        private final MeterRegistry registry;
        private final String name;
        private String source;
        private Tags tags;
        private Boolean publishPercentileHistogram;

        private Builder(MeterRegistry registry, String name) {
            this.registry = Require.notNull(registry, "registry");
            this.name = notBlank(name, "name");
        }

        /**
         * Where requests come from, the {@code source} tag: {@value MicrometerRetrySafeListener#DEFAULT_SOURCE}
         * by default; messaging adapters pass {@code kafka} or {@code nats}.
         */
        public Builder source(String source) {
            Require.unset(this.source, "source");
            this.source = notBlank(source, "source");
            return this;
        }

        /**
         * Extra tags on every meter, such as {@code region}; they may not use a
         * {@linkplain MicrometerRetrySafeListener#RESERVED_TAG_KEYS reserved key}. Never put a key, a
         * scope or anything else per request here.
         */
        public Builder tags(Iterable<Tag> tags) {
            Require.unset(this.tags, "tags");
            Tags extra = Tags.of(Require.notNull(tags, "tags"));
            for (Tag tag : extra) {
                if (RESERVED_TAG_KEYS.contains(tag.getKey())) {
                    throw new IllegalArgumentException("tags must not use the keys " + new TreeSet<>(RESERVED_TAG_KEYS)
                            + ", which the listener sets itself, but had " + tag);
                }
            }
            this.tags = extra;
            return this;
        }

        /**
         * Whether {@value MicrometerRetrySafeListener#STORE_LATENCY} publishes a percentile histogram:
         * aggregable across instances, at the cost of about 70 extra time series per store and operation
         * on registries that support it (Prometheus, for one). Off by default.
         */
        public Builder publishPercentileHistogram(boolean publishPercentileHistogram) {
            Require.unset(this.publishPercentileHistogram, "publishPercentileHistogram");
            this.publishPercentileHistogram = publishPercentileHistogram;
            return this;
        }

        /** Builds the listener and registers its counters with the registry. */
        public MicrometerRetrySafeListener build() {
            return new MicrometerRetrySafeListener(this);
        }

        private static String notBlank(String value, String what) {
            return Require.notBlank(value, what);
        }
    }
}
