package io.retrysafe.inbox;

import java.util.Locale;

/** Why a message was not done this time and must come back: {@link InboxResult.RetryLater#reason()}. */
public enum RetryReason {
    /** Another delivery of the same id holds it and did not commit within the store's lock timeout (a rebalance, a second consumer). */
    IN_PROGRESS,
    /** The database failed before the handler ran, or while committing: nothing of the handler was kept. */
    STORE_UNAVAILABLE,
    /** The handler threw, attempts are left, and the broker is to redeliver ({@link RetryStyle#BROKER_REDELIVERY}). */
    HANDLER_FAILED,
    /** The thread was interrupted while it waited to try again ({@link RetryStyle#IN_PROCESS}). */
    INTERRUPTED,
    /** The message was to be dead-lettered, but the adapter could not publish it to the dead-letter destination. */
    DEAD_LETTER_FAILED;

    /** Lower case with hyphens, {@code store-unavailable}: for logs and metric tags. */
    public String tagValue() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
