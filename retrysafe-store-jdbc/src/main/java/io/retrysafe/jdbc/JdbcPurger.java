package io.retrysafe.jdbc;

import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.internal.MaintenanceSql;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.DoubleFunction;
import java.util.function.LongSupplier;

/**
 * Deletes expired records in bounded batches, each its own short transaction, so that a purge never
 * holds locks on millions of rows or bloats one transaction. One runner at a time across every
 * instance: the run holds a database lock (PostgreSQL advisory lock, MariaDB {@code GET_LOCK}) and a
 * second instance that finds it taken skips its run.
 *
 * <pre>{@code
 * JdbcPurger purger = store.purger().batchSize(5_000).build();
 * PurgeResult result = purger.purge();
 * }</pre>
 *
 * <p>With {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}, a run is the {@link PartitionMaintainer}'s
 * (create days ahead, drop expired days whole) followed by batches over the default partition only:
 * expired rows in day partitions are never deleted one by one, their day is dropped once it is over.
 *
 * <p>{@link Builder#maxDutyCycle(double)} paces the batches, so that the run takes at most that share of
 * the database's time (of one connection's) and claims keep more of theirs; the run takes longer in
 * proportion. An interrupted run (its scheduler closed) stops after the batch in flight, or at once in a
 * pause, releases its lock and keeps the thread's interrupt.
 */
public final class JdbcPurger {
    public static final int DEFAULT_BATCH_SIZE = 1_000;
    public static final int DEFAULT_MAX_BATCHES = 100_000;
    /** Back to back: each batch follows the last at once. */
    public static final double DEFAULT_MAX_DUTY_CYCLE = 1.0;

    private static final System.Logger LOG = System.getLogger(JdbcPurger.class.getName());

    private final JdbcIdempotencyStore store;
    private final int batchSize;
    private final int maxBatches;
    private final PartitionMaintainer maintainer;
    private final double maxDutyCycle;
    private final BatchPacing pacing;

    private JdbcPurger(Builder b) {
        this.store = b.store;
        this.maintainer = b.maintainer != null ? b.maintainer
                : store.layout() == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY ? store.partitions().build() : null;
        this.batchSize = b.batchSize == null ? DEFAULT_BATCH_SIZE : b.batchSize;
        this.maxBatches = b.maxBatches == null ? DEFAULT_MAX_BATCHES : b.maxBatches;
        this.maxDutyCycle = b.maxDutyCycle == null ? DEFAULT_MAX_DUTY_CYCLE : b.maxDutyCycle;
        this.pacing = b.pacing != null ? b.pacing.apply(maxDutyCycle)
                : new BatchPacing(maxDutyCycle, System::nanoTime, BatchPacing.SLEEP);
    }

    static Builder builder(JdbcIdempotencyStore store) {
        return new Builder(store);
    }

    public int batchSize() {
        return batchSize;
    }

    /** The share of a run's time spent in batches, at most; 1 is back to back. */
    public double maxDutyCycle() {
        return maxDutyCycle;
    }

    /** The partition maintenance a run begins with; null for the standard layout. */
    public PartitionMaintainer maintainer() {
        return maintainer;
    }

    /** One lock per table, shared by the purge and the partition maintenance. */
    static String lockName(JdbcIdempotencyStore store) {
        return "retrysafe-purge:" + store.sql().table();
    }

    /**
     * Deletes expired records batch by batch until a batch finds fewer than {@link #batchSize()}, or
     * {@code maxBatches} were run, pausing between batches as {@link #maxDutyCycle()} says. Returns at once,
     * with {@code ran == false}, if another instance is purging. An interrupt stops the run after the batch
     * in flight (at once in a pause); the result counts what it deleted, and the thread stays interrupted.
     * A run that stops at {@code maxBatches} with more to delete logs a warning, and its result is not
     * {@link PurgeResult#finished()}.
     */
    public PurgeResult purge() {
        MaintenanceSql sql = store.sql().maintenance();
        String lock = lockName(store);
        long start = System.nanoTime();
        try (Connection c = store.dataSource().getConnection()) {
            c.setAutoCommit(true);
            if (!sql.tryLock(c, lock)) {
                LOG.log(Level.INFO, () -> "[" + store.name() + "] purge skipped: another instance holds " + lock);
                return new PurgeResult(false, 0, 0, Duration.ofNanos(System.nanoTime() - start));
            }
            long deleted = 0;
            int batches = 0;
            int last;
            boolean more;
            PartitionMaintainer.Report partitions = null;
            try {
                MaintenanceSql.Batches batch = sql.batches();
                if (maintainer != null) {
                    partitions = maintainer.maintainLocked(c, start);
                    batch = store.sql().partitions()::purgeDefaultBatch;
                }
                long batchStart;
                do {
                    batchStart = pacing.now();
                    last = batch.next(c, batchSize);
                    deleted += last;
                    batches++;
                    more = last == batchSize && batches < maxBatches;
                } while (more && pacing.pauseAfter(batchStart));
            } finally {
                c.setAutoCommit(true);
                sql.unlock(c, lock);
            }
            boolean finished = last < batchSize;
            PurgeResult result = new PurgeResult(true, deleted, batches, Duration.ofNanos(System.nanoTime() - start),
                    partitions, finished);
            // Still more to delete: the loop ended because the thread was interrupted.
            boolean interrupted = more;
            String did = "[" + store.name() + "] purge deleted " + result.deleted() + " expired records in "
                    + result.batches() + " batches, " + result.took().toMillis() + " ms";
            if (finished || interrupted) {
                LOG.log(Level.INFO, () -> did + (interrupted ? "; interrupted, the next run continues" : ""));
            } else {
                // Once is a backlog; every time is a purge slower than expiry, and no later run catches up.
                LOG.log(Level.WARNING, () -> did + "; stopped at maxBatches (" + maxBatches + ") with expired records"
                        + " left, the next run continues. If every run stops here, records expire faster than the"
                        + " purge deletes them: raise batchSize or maxDutyCycle, purge more often, or partition by"
                        + " expiry day");
            }
            if (interrupted) {
                Thread.currentThread().interrupt(); // the pacing cleared it, so that the unlock ran without it
            }
            return result;
        } catch (SQLException e) {
            throw store.failure("purge", e);
        }
    }

    /** Builds a {@link JdbcPurger}; each value may be set once. */
    public static final class Builder {
        private final JdbcIdempotencyStore store;
        private Integer batchSize;
        private Integer maxBatches;
        private PartitionMaintainer maintainer;
        private Double maxDutyCycle;
        private DoubleFunction<BatchPacing> pacing;

        private Builder(JdbcIdempotencyStore store) {
            this.store = store;
        }

        /** Rows deleted per transaction: small enough to keep each delete's locks and WAL short. */
        public Builder batchSize(int batchSize) {
            Require.unset(this.batchSize, "batchSize");
            this.batchSize = Require.between(batchSize, 1, 1_000_000, "batchSize");
            return this;
        }

        /** Bounds one run, so that a run that cannot keep up still ends and the next one continues. */
        public Builder maxBatches(int maxBatches) {
            Require.unset(this.maxBatches, "maxBatches");
            this.maxBatches = Require.between(maxBatches, 1, Integer.MAX_VALUE, "maxBatches");
            return this;
        }

        /**
         * The share of a run's time its batches may take, more than 0 and at most 1 (the default, batches
         * back to back): after a batch that took t, the run pauses t × (1/share − 1), holding its lock and
         * its connection. At 0.5 a run takes about twice as long, and claims compete with it half the time.
         */
        public Builder maxDutyCycle(double share) {
            Require.unset(this.maxDutyCycle, "maxDutyCycle");
            if (!(share > 0 && share <= 1)) {
                throw new IllegalArgumentException("maxDutyCycle must be more than 0 and at most 1, but was " + share);
            }
            this.maxDutyCycle = share;
            return this;
        }

        /** For tests: the clock that times each batch and what takes the pause after it. */
        Builder pacing(LongSupplier nanoTime, BatchPacing.Sleeper sleeper) {
            Require.unset(this.pacing, "pacing");
            Require.notNull(nanoTime, "nanoTime");
            Require.notNull(sleeper, "sleeper");
            this.pacing = share -> new BatchPacing(share, nanoTime, sleeper);
            return this;
        }

        /**
         * The partition maintenance each run begins with, for {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}
         * ({@code store.partitions().build()} by default).
         */
        public Builder maintainer(PartitionMaintainer maintainer) {
            Require.unset(this.maintainer, "maintainer");
            Require.notNull(maintainer, "maintainer");
            if (store.layout() != JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
                throw new IllegalArgumentException("a partition maintainer needs layout "
                        + JdbcLayout.PARTITIONED_BY_EXPIRY_DAY + ", but the store's layout is " + store.layout());
            }
            if (maintainer.store() != store) {
                throw new IllegalArgumentException("the partition maintainer must be this store's (store.partitions()),"
                        + " but it was " + maintainer.store().name() + "'s");
            }
            this.maintainer = maintainer;
            return this;
        }

        public JdbcPurger build() {
            return new JdbcPurger(this);
        }
    }
}
