package io.retrysafe.spring;

import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterSink;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.springframework.kafka.core.KafkaOperations;

/**
 * With {@code retrysafe.kafka.dead-letters=inbox}: a record's dead letter as every inbox consumer
 * publishes it, a copy of the record (key, value, its own headers) on {@code <topic><suffix>} with
 * the inbox's {@code retrysafe-dlt-*} headers in place of any it carried, sent through the
 * application's {@code KafkaTemplate}; returns once the broker acknowledged it.
 */
final class KafkaDeadLetterPublisher {
    /** How long a send may take before the record is retried instead. */
    private static final long SEND_TIMEOUT_SECONDS = 30;

    private final KafkaOperations<Object, Object> template;
    private final String suffix;

    KafkaDeadLetterPublisher(KafkaOperations<Object, Object> template, String suffix) {
        this.template = template;
        this.suffix = suffix;
    }

    DeadLetterSink of(ConsumerRecord<?, ?> record) {
        return deadLetter -> {
            Headers headers = new RecordHeaders(record.headers().toArray());
            DeadLetterHeaders.NAMES.forEach(headers::remove);
            deadLetter.headers().forEach((name, value) -> headers.add(name, value.getBytes(StandardCharsets.UTF_8)));
            template.send(new ProducerRecord<>(record.topic() + suffix, null, null, record.key(), record.value(),
                    headers)).get(SEND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        };
    }
}
