package io.retrysafe.examples.orderevents;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.KafkaInbox;
import io.retrysafe.nats.NatsInbox;
import io.retrysafe.rabbitmq.RabbitInbox;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The three adapters this example runs have one shape: {@code builder(inbox, handler)}, the broker's
 * own setters, and {@code deadLetters(…)}, without which none of them builds. No broker and no
 * database is reached.
 */
class AdapterShapeTest {
    private static final TransactionalRetrySafe TRANSACTIONAL = TransactionalRetrySafe.of(RetrySafe.builder(
            JdbcIdempotencyStore.builder(new PGSimpleDataSource()).dialect(JdbcDialect.POSTGRESQL).build()).build());

    @Test
    void everyAdapterRefusesToBuildWithoutDeadLettersAndSaysWhyInTheSameWords() {
        Inbox inProcess = Inbox.builder(TRANSACTIONAL).build();
        Inbox redelivering = Inbox.builder(TRANSACTIONAL).retryStyle(RetryStyle.BROKER_REDELIVERY).build();
        List<ThrowingCallable> builds = List.of(
                () -> KafkaInbox.<String, String>builder(inProcess, (record, connection, attempt) -> { })
                        .consumerGroup("booking").build(),
                () -> NatsInbox.builder(redelivering, (msg, connection, attempt) -> { }).build(),
                () -> RabbitInbox.builder(inProcess, (delivery, connection, attempt) -> { })
                        .consumerName("booking").build());

        for (ThrowingCallable build : builds) {
            assertThatThrownBy(build).isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("deadLetters must be set: a message given up must go somewhere, or ");
        }
    }
}
