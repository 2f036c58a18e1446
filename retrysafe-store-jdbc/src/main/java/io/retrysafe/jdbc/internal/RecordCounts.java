package io.retrysafe.jdbc.internal;

/**
 * Counts over a records table, read by one statement at one database time. The status and age
 * counts are of live records (not expired); {@code expired} counts the records past
 * {@code expires_at} that no purge has deleted yet. Ages are since {@code created_at}: under one
 * hour, one hour to a day, a day to a week, older.
 */
public record RecordCounts(long inProgress, long completed, long failed, long underOneHour, long underOneDay,
        long underOneWeek, long older, long expired) {
}
