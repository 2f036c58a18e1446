package io.retrysafe.jdbc;

import java.time.Duration;

/**
 * What one purge run did. {@code ran} is false when another instance held the purge lock, in which
 * case nothing was deleted by this one. {@code deleted} counts rows deleted one by one; with
 * {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}, {@code partitions} says which expired days were dropped
 * whole (null for the standard layout, and when the run did not run).
 *
 * <p>{@code finished} is true when the run's last batch found fewer expired records than a batch holds: it
 * left none behind. It is false when the run stopped where more may be left, at {@code maxBatches} after a
 * full batch or on an interrupt (the next run continues), and when it did not run. A purge whose runs keep
 * stopping at {@code maxBatches} deletes more slowly than records expire, and never catches up.
 */
public record PurgeResult(boolean ran, long deleted, int batches, Duration took, PartitionMaintainer.Report partitions,
        boolean finished) {

    /** A run that did not finish, or did not run, with no partition maintenance. */
    public PurgeResult(boolean ran, long deleted, int batches, Duration took) {
        this(ran, deleted, batches, took, null, false);
    }
}
