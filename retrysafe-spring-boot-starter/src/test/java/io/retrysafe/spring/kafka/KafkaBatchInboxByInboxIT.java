package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.test.context.TestPropertySource;

/**
 * {@link KafkaBatchInboxIT}'s tests with {@code retrysafe.kafka.dead-letters=inbox}: the inbox retries
 * a failing record within the call and publishes the dead letters itself, with the same
 * {@code retrysafe-dlt-*} headers and none of Spring Kafka's.
 */
@TestPropertySource(properties = "retrysafe.kafka.dead-letters=inbox")
class KafkaBatchInboxByInboxIT extends KafkaBatchInboxIT {

    @Override
    void assertSpringsHeaders(List<ConsumerRecord<String, String>> deadLetters) {
        assertThat(deadLetters).allSatisfy(record -> assertThat(record.headers())
                .noneMatch(header -> header.key().startsWith("kafka_dlt-")));
    }
}
