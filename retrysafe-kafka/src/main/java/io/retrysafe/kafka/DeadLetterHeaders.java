package io.retrysafe.kafka;

/**
 * Headers a dead letter carries, besides all of the original record's (its message id header
 * included, so that a dead letter published back to the original topic is still deduplicated).
 * Values are UTF-8 text; numbers are in decimal. Headers of these names already on the record (a
 * dead letter that failed again) are replaced.
 */
public final class DeadLetterHeaders {
    /** {@link DeadLetterReason#headerValue()}. */
    public static final String REASON = "retrysafe-dlt-reason";
    /** The exception's class and message (no stack trace), at most {@value #MAX_EXCEPTION_LENGTH} characters. */
    public static final String EXCEPTION = "retrysafe-dlt-exception";
    /** How many times the handler ran: {@code 0} when it never did (no id, mismatch). */
    public static final String ATTEMPTS = "retrysafe-dlt-attempts";
    public static final String ORIGINAL_TOPIC = "retrysafe-dlt-original-topic";
    public static final String ORIGINAL_PARTITION = "retrysafe-dlt-original-partition";
    public static final String ORIGINAL_OFFSET = "retrysafe-dlt-original-offset";
    /** The consumer group that gave up on the record. */
    public static final String CONSUMER_GROUP = "retrysafe-dlt-consumer-group";

    public static final int MAX_EXCEPTION_LENGTH = 1000;

    private DeadLetterHeaders() {
    }
}
