package io.retrysafe.inbox;

/**
 * Hears what an {@link Inbox} does, for metrics and logs beyond the engine's own (the engine's
 * {@link io.retrysafe.spi.RetrySafeListener} counts executed, replayed, in-progress, mismatched and
 * refused ids). Every method does nothing by default; an exception a listener throws is logged and
 * swallowed. Called on the consumer's thread: keep it quick.
 */
public interface InboxListener {

    InboxListener NONE = new InboxListener() {
    };

    /** The handler threw on attempt {@code attempt}; its transaction was rolled back. */
    default void onHandlerFailure(Delivery delivery, int attempt, Exception error) {
    }

    /** Once per {@link Inbox#process}, with its result. */
    default void onResult(Delivery delivery, InboxResult result) {
    }
}
