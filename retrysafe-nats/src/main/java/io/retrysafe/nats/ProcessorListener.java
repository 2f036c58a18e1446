package io.retrysafe.nats;

import io.nats.client.Message;

/**
 * Hears what the {@link IdempotentMessageProcessor} did with each delivery, for metrics and
 * tests. Engine events (outcomes, store errors and latency) reach the engine's own
 * {@link io.retrysafe.spi.RetrySafeListener}. An exception thrown here is logged and swallowed.
 */
public interface ProcessorListener {

    ProcessorListener NONE = new ProcessorListener() {
    };

    /** Called once per delivery, after the message was acked, nakked or terminated. */
    default void onDisposition(Message message, Disposition disposition) {
    }
}
