package io.retrysafe.inbox;

/**
 * The adapter's side of dead-lettering: copies the message it is processing, with
 * {@link InboxResult.DeadLetter#headers()} written in its broker's header format (replacing
 * headers of those names), to its dead-letter destination, and returns only once the broker
 * acknowledged it. A throw leaves the message to be tried again: {@link Inbox#process} then
 * answers {@link InboxResult.RetryLater} with {@link RetryReason#DEAD_LETTER_FAILED}.
 */
@FunctionalInterface
public interface DeadLetterSink {

    void publish(InboxResult.DeadLetter deadLetter) throws Exception;
}
