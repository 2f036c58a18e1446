package io.retrysafe.nats;

import java.time.Duration;

/**
 * What {@link IdempotentMessageProcessor#process} did with one delivery, and what it told
 * JetStream. Races are values: a redelivery that found the id already processed is a
 * {@link Replayed}, not an error.
 */
public sealed interface Disposition {

    /** The handler ran, its transaction committed with the message id, then the message was acked. */
    record Processed(int attempt) implements Disposition {
    }

    /** The id was processed before (a redelivery or a producer's duplicate): acked, the handler did not run. */
    record Replayed() implements Disposition {
    }

    /** Not processed this time: {@code nakWithDelay(delay)}, so JetStream delivers it again after {@code delay}. */
    record Redelivered(Reason reason, Duration delay) implements Disposition {
    }

    /**
     * Never to be processed: terminated with {@code term()}, after it was published to the
     * dead-letter subject when one is configured ({@code deadLettered}).
     */
    record Terminated(Reason reason, boolean deadLettered) implements Disposition {
    }

    /** Why a message was redelivered or terminated; {@link #header()} is the dead letter's {@code RetrySafe-Reason}. */
    enum Reason {
        /** Another delivery of the same id holds it and did not commit within the store's lock timeout. */
        IN_PROGRESS,
        /** The database failed before the handler ran, or while committing. */
        STORE_UNAVAILABLE,
        /** The handler threw; deliveries are left. */
        HANDLER_FAILED,
        /** The handler threw on delivery {@code maxDeliver} or later. */
        RETRIES_EXHAUSTED,
        /** The handler threw an exception that the processor is configured to treat as permanent. */
        PERMANENT_FAILURE,
        /** The id was processed before with another payload: a producer bug (an id reused for another message). */
        FINGERPRINT_MISMATCH,
        /** The message has no id ({@link MessageIds} found none). */
        MISSING_MESSAGE_ID,
        /** The message's id is not a valid key (empty, too long, not printable ASCII), or reading it failed. */
        INVALID_MESSAGE_ID,
        /** The message was to be dead-lettered, but publishing it to the dead-letter subject failed. */
        DEAD_LETTER_FAILED;

        /** The reason in lower case with hyphens, as in the dead letter's header: {@code retries-exhausted}. */
        public String header() {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }
    }
}
