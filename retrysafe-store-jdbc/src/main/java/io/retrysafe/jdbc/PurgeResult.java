package io.retrysafe.jdbc;

import java.time.Duration;

/**
 * What one purge run did. {@code ran} is false when another instance held the purge lock, in which
 * case nothing was deleted by this one. {@code deleted} counts rows deleted one by one; with
 * {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}, {@code partitions} says which expired days were dropped
 * whole (null for the standard layout, and when the run did not run).
 */
public record PurgeResult(boolean ran, long deleted, int batches, Duration took, PartitionMaintainer.Report partitions) {

    public PurgeResult(boolean ran, long deleted, int batches, Duration took) {
        this(ran, deleted, batches, took, null);
    }
}
