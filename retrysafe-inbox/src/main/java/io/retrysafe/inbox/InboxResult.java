package io.retrysafe.inbox;

import io.retrysafe.internal.Require;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@link Inbox#process} decided for one delivery, and so what the adapter tells its broker.
 * Every result but {@link RetryLater} is {@linkplain #isDone() done}: the message may be
 * acknowledged (its offset committed).
 */
public sealed interface InboxResult {

    /** The handler ran and its writes committed with the message id. {@code attempts} counts its runs, failed ones included. */
    record Processed(int attempts) implements InboxResult {
    }

    /**
     * The id was processed before with the same payload (a redelivery, a producer's duplicate): the
     * handler did not run. {@code firstProcessedAt} is the {@link Delivery#position()} of the
     * delivery that processed it.
     */
    record Replayed(String firstProcessedAt) implements InboxResult {
    }

    /**
     * Not done: the message must come back after {@code delay} (the adapter nacks with that delay,
     * or seeks back and pauses). Nothing of the handler was kept.
     */
    record RetryLater(Duration delay, RetryReason reason, String detail) implements InboxResult {
        public RetryLater {
            Require.notNegative(delay, "delay");
            Require.notNull(reason, "reason");
            Require.notNull(detail, "detail");
        }
    }

    /**
     * The message was dead-lettered: the adapter's {@link DeadLetterSink} published a copy with
     * {@code headers} to its dead-letter destination and the broker acknowledged it; the original
     * may be acknowledged now. (Had the publish failed, the result would be {@link RetryLater} with
     * {@link RetryReason#DEAD_LETTER_FAILED}.)
     *
     * @param attempts how often the handler ran: 0 when it never did (no id, mismatch, unreadable payload)
     * @param error    the failure's class and message on one line, at most
     *                 {@value DeadLetterHeaders#MAX_ERROR_LENGTH} characters; empty when there was none
     * @param headers  {@link DeadLetterHeaders#of}: the same names and values on every broker
     */
    record DeadLetter(DeadLetterReason reason, int attempts, String error, Map<String, String> headers)
            implements InboxResult {
        public DeadLetter {
            Require.notNull(reason, "reason");
            Require.notNull(error, "error");
            headers = Collections.unmodifiableMap(new LinkedHashMap<>(Require.notNull(headers, "headers")));
        }
    }

    /** True when the message may be acknowledged (after publishing the dead letter, for a {@link DeadLetter}). */
    default boolean isDone() {
        return !(this instanceof RetryLater);
    }
}
