package io.retrysafe.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Hears what an {@link IdempotentRecordProcessor} does, for metrics and alerts beyond the engine's
 * own (the engine's {@link io.retrysafe.spi.RetrySafeListener} counts executed, replayed, in
 * progress, mismatched and refused ids). Every method does nothing by default; an exception a
 * listener throws is logged and swallowed. Called on the consumer's thread: keep it quick.
 */
public interface RecordProcessorListener {

    RecordProcessorListener NONE = new RecordProcessorListener() {
    };

    /** The handler threw on attempt {@code attempt}; its transaction was rolled back. */
    default void onHandlerFailure(ConsumerRecord<?, ?> record, int attempt, Exception error) {
    }

    /** Called once per {@link IdempotentRecordProcessor#process} with its result. */
    default void onResult(ConsumerRecord<?, ?> record, RecordResult result) {
    }
}
