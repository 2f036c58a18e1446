package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.test.context.TestPropertySource;

/**
 * {@link KafkaDeadLettersIT} with {@code retrysafe.kafka.dead-letters=error-handler} and no error
 * handler of the application's: the starter's {@code DefaultErrorHandler} retries with the same
 * attempts and back-off and publishes to the same topic with the same inbox headers, and Spring
 * Kafka's {@code kafka_dlt-*} headers besides.
 */
@TestPropertySource(properties = "retrysafe.kafka.dead-letters=error-handler")
class KafkaDeadLettersByErrorHandlerIT extends KafkaDeadLettersIT {

    @Override
    void assertTransportHeaders(ConsumerRecord<String, String> deadLetter) {
        assertThat(header(deadLetter, "kafka_dlt-original-topic")).isEqualTo(deadLetter.topic().replace(".DLT", ""));
        assertThat(header(deadLetter, "kafka_dlt-exception-cause-fqcn")).isEqualTo(IllegalStateException.class.getName());
    }
}
