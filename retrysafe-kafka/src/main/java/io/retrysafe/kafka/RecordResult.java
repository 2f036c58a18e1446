package io.retrysafe.kafka;

import java.time.Duration;

/**
 * What {@link IdempotentRecordProcessor#process} did with a record. Every result but
 * {@link RetryLater} is {@linkplain #done() done}: the record's offset may be committed.
 */
public sealed interface RecordResult {

    /** The handler ran, and its writes committed with the message id. {@code attempts} counts its runs, the failed ones included. */
    record Processed(int attempts) implements RecordResult {
    }

    /**
     * The message id was processed before (a redelivery, or a producer's duplicate): the handler did
     * not run. {@code firstProcessedAt} is where it was, as {@code topic-partition@offset}.
     */
    record Replayed(String firstProcessedAt) implements RecordResult {
    }

    /** The record was sent to {@code deadLetterTopic}, and acknowledged there. */
    record DeadLettered(DeadLetterReason reason, int attempts, String deadLetterTopic) implements RecordResult {
    }

    /**
     * Not done: another transaction holds the message id (another consumer of the group, during a
     * rebalance), the database failed, or the dead-letter topic did not acknowledge. The record must
     * be processed again, after {@code retryAfter}; no offset past it may be committed.
     */
    record RetryLater(Duration retryAfter, String reason) implements RecordResult {
    }

    /** True when the record's offset may be committed. */
    default boolean done() {
        return !(this instanceof RetryLater);
    }
}
