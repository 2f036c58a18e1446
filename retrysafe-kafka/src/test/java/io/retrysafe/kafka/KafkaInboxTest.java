package io.retrysafe.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.util.List;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Configuration checks of the processor and the loop; no database and no broker is reached. */
class KafkaInboxTest {
    private static final TransactionalRetrySafe TRANSACTIONAL = TransactionalRetrySafe.of(RetrySafe.builder(
            JdbcIdempotencyStore.builder(new PGSimpleDataSource()).dialect(JdbcDialect.POSTGRESQL).build()).build());
    private static final Inbox INBOX = Inbox.builder(TRANSACTIONAL).build();
    private static final RecordHandler<String, String> HANDLER = (record, connection, attempt) -> {
    };
    private static final DeadLetterPublisher<String, String> NOWHERE = deadLetter -> {
    };

    private static KafkaInbox.Builder<String, String> builder() {
        return KafkaInbox.builder(INBOX, HANDLER).consumerGroup("shipping");
    }

    @Test
    void defaults() {
        KafkaInbox<String, String> processor = builder().deadLetters(NOWHERE).build();
        assertThat(processor.inbox().maxAttempts()).isEqualTo(Inbox.DEFAULT_MAX_ATTEMPTS).isEqualTo(3);
        assertThat(processor.inbox().backoff()).isEqualTo(Inbox.DEFAULT_BACKOFF);
        assertThat(processor.inbox().retryStyle()).isEqualTo(RetryStyle.IN_PROCESS);
        assertThat(processor.messageIds()).hasToString("header(idempotency-key)");
        assertThat(processor.deadLetterTopic("orders")).isEqualTo("orders.DLT");
        assertThat(processor.scope("orders")).isEqualTo("kafka:shipping:orders");
        assertThat(processor.key("orders", "msg-1").scope()).isEqualTo("kafka:shipping:orders");
    }

    @Test
    void deadLettersAndTheConsumerGroupAreRequired() {
        assertThatThrownBy(() -> builder().build()).isInstanceOf(IllegalStateException.class)
                .hasMessage("deadLetters must be set: a message given up must go somewhere, or its partition stops "
                        + "behind it");
        assertThatThrownBy(() -> KafkaInbox.builder(INBOX, HANDLER).deadLetters(NOWHERE).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("consumerGroup must be set: it is part of the scope kafka:<consumer group>:<topic>");
    }

    @Test
    void eachValueIsSetOnce() {
        assertThatThrownBy(() -> builder().consumerGroup("billing")).isInstanceOf(IllegalStateException.class)
                .hasMessage("consumerGroup was already set to shipping");
    }

    @Test
    void argumentsAreChecked() {
        assertThatThrownBy(() -> KafkaInbox.builder(INBOX, HANDLER).consumerGroup(" "))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("consumerGroup must not be blank, but was \" \"");
        Inbox redelivering = Inbox.builder(TRANSACTIONAL).retryStyle(RetryStyle.BROKER_REDELIVERY).build();
        assertThatThrownBy(() -> KafkaInbox.builder(redelivering, HANDLER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("the inbox's retry style must be IN_PROCESS, but was BROKER_REDELIVERY");
    }

    @Test
    void aScopeLongerThanTheStoreTakesIsRefusedWhenTheLoopIsBuilt() {
        KafkaInbox<String, String> processor = builder().deadLetters(NOWHERE).build();
        String topic = "t".repeat(249);
        assertThatThrownBy(() -> RetrySafeKafkaConsumer.builder(new MockConsumer<String, String>(
                "earliest"), processor).topics(topic))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("the scope kafka:")
                .hasMessageContaining("must have at most 255 characters, but had 264");
    }

    @Test
    void theLoopRefusesAConsumerOfAnotherGroup() {
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        RetrySafeKafkaConsumer<String, String> loop = RetrySafeKafkaConsumer
                .builder(consumer, builder().deadLetters(NOWHERE).build()).topics("orders").build();
        assertThatThrownBy(loop::run).isInstanceOf(IllegalStateException.class)
                .hasMessage("the consumer's group.id must be the processor's consumer group shipping, but was "
                        + consumer.groupMetadata().groupId());
        assertThat(consumer.closed()).as("the loop owns the consumer and closed it").isTrue();
        assertThatThrownBy(loop::run).isInstanceOf(IllegalStateException.class)
                .hasMessage("a loop runs once, but run() was called again");
    }

    @Test
    void theLoopNeedsTopics() {
        KafkaInbox<String, String> processor = builder().deadLetters(NOWHERE).build();
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        assertThatThrownBy(() -> RetrySafeKafkaConsumer.builder(consumer, processor).build())
                .isInstanceOf(IllegalStateException.class).hasMessage("topics must be set");
        assertThatThrownBy(() -> RetrySafeKafkaConsumer.builder(consumer, processor).topics(List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("topics must not be empty, but was []");
    }
}
