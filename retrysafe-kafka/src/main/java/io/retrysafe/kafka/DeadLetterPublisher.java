package io.retrysafe.kafka;

import io.retrysafe.internal.Require;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Sends a dead letter and returns only once the broker acknowledged it: the record's offset is
 * committed after that, so a send that fails (throws) leaves the record to be tried again.
 *
 * <pre>{@code
 * DeadLetterPublisher<String, String> deadLetters = DeadLetterPublisher.of(producer);
 * // Spring Kafka: deadLetter -> kafkaTemplate.send(deadLetter).get()
 * }</pre>
 */
@FunctionalInterface
public interface DeadLetterPublisher<K, V> {

    /** Sends {@code deadLetter}; returns when it is acknowledged, throws if it was not. */
    void publish(ProducerRecord<K, V> deadLetter) throws Exception;

    /**
     * Sends with {@code producer} and waits for the acknowledgement, which the producer's
     * {@code delivery.timeout.ms} bounds (2 minutes by default). Give it {@code acks=all} (the
     * default), so that an acknowledged dead letter survives the loss of a broker. The producer is
     * the application's: it is never closed here.
     */
    static <K, V> DeadLetterPublisher<K, V> of(Producer<K, V> producer) {
        Require.notNull(producer, "producer");
        return deadLetter -> producer.send(deadLetter).get();
    }
}
