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
class IdempotentRecordProcessorTest {
    private static final TransactionalRetrySafe INBOX = TransactionalRetrySafe.of(RetrySafe.builder(
            JdbcIdempotencyStore.builder(new PGSimpleDataSource()).dialect(JdbcDialect.POSTGRESQL).build()).build());
    private static final RecordHandler<String, String> HANDLER = (record, connection, attempt) -> {
    };
    private static final DeadLetterPublisher<String, String> NOWHERE = deadLetter -> {
    };

    private static IdempotentRecordProcessor.Builder<String, String> builder() {
        return IdempotentRecordProcessor.builder(INBOX, "shipping", HANDLER);
    }

    @Test
    void defaults() {
        IdempotentRecordProcessor<String, String> processor = builder().deadLetters(NOWHERE).build();
        assertThat(processor.inbox().maxAttempts()).isEqualTo(Inbox.DEFAULT_MAX_ATTEMPTS).isEqualTo(3);
        assertThat(processor.inbox().backoff()).isEqualTo(Inbox.DEFAULT_BACKOFF);
        assertThat(processor.inbox().retryStyle()).isEqualTo(RetryStyle.IN_PROCESS);
        assertThat(processor.messageIds()).hasToString("header(idempotency-key)");
        assertThat(processor.deadLetterTopic("orders")).isEqualTo("orders.DLT");
        assertThat(processor.scope("orders")).isEqualTo("kafka:shipping:orders");
        assertThat(processor.key("orders", "msg-1").scope()).isEqualTo("kafka:shipping:orders");
    }

    @Test
    void deadLettersAreRequired() {
        assertThatThrownBy(() -> builder().build()).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("deadLetters must be set");
    }

    @Test
    void eachValueIsSetOnce() {
        assertThatThrownBy(() -> builder().maxAttempts(3).maxAttempts(4)).isInstanceOf(IllegalStateException.class)
                .hasMessage("maxAttempts was already set to 3");
    }

    @Test
    void argumentsAreChecked() {
        assertThatThrownBy(() -> builder().maxAttempts(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxAttempts must be between 1 and 2147483647, but was 0");
        assertThatThrownBy(() -> builder().backoff(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("backoff must not be null");
        assertThatThrownBy(() -> IdempotentRecordProcessor.builder(INBOX, " ", HANDLER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("consumerGroup must not be blank, but was \" \"");
    }

    @Test
    void aScopeLongerThanTheStoreTakesIsRefusedWhenTheLoopIsBuilt() {
        IdempotentRecordProcessor<String, String> processor = builder().deadLetters(NOWHERE).build();
        String topic = "t".repeat(249);
        assertThatThrownBy(() -> IdempotentConsumerLoop.builder(new MockConsumer<String, String>(
                "earliest"), processor).topics(topic))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("the scope kafka:")
                .hasMessageContaining("must have at most 255 characters, but had 264");
    }

    @Test
    void theLoopRefusesAConsumerOfAnotherGroup() {
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        IdempotentConsumerLoop<String, String> loop = IdempotentConsumerLoop
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
        IdempotentRecordProcessor<String, String> processor = builder().deadLetters(NOWHERE).build();
        MockConsumer<String, String> consumer = new MockConsumer<>("earliest");
        assertThatThrownBy(() -> IdempotentConsumerLoop.builder(consumer, processor).build())
                .isInstanceOf(IllegalStateException.class).hasMessage("topics must be set");
        assertThatThrownBy(() -> IdempotentConsumerLoop.builder(consumer, processor).topics(List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("topics must not be empty, but was []");
    }
}
