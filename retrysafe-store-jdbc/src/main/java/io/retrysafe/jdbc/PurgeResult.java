package io.retrysafe.jdbc;

import java.time.Duration;

/**
 * What one purge run did. {@code ran} is false when another instance held the purge lock, in which
 * case nothing was deleted by this one.
 */
public record PurgeResult(boolean ran, long deleted, int batches, Duration took) {
}
