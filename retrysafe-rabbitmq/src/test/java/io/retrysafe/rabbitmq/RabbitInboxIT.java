package io.retrysafe.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import io.retrysafe.Backoff;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRabbit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link RabbitInbox} on a {@link RetrySafeRabbitConsumer}, on the shared RabbitMQ and PostgreSQL:
 * what is acknowledged, what reaches the dead-letter queue and with which headers, and what stays
 * when the dead-letter queue cannot take it.
 */
class RabbitInboxIT {
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Backoff FAST = Backoff.exponential(Duration.ofMillis(5), Duration.ofMillis(20));
    /** How long a "retry later" waits: short, so that a dead-letter queue declared late is found soon. */
    private static final Duration RETRY_AFTER = Duration.ofMillis(100);

    private static Queues queues;
    private static DataSource ds;
    private static TransactionalRetrySafe transactional;

    private final List<InboxResult> results = new CopyOnWriteArrayList<>();
    private final List<RetrySafeRabbitConsumer> consumers = new ArrayList<>();
    private String consumerName;

    @BeforeAll
    static void setUp() throws Exception {
        queues = Queues.open("retrysafe-rabbit-inbox-it");
        ds = TestDatabases.postgres();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(Effects.STORE_TABLE).build();
        store.createSchema();
        Effects.createTable(ds);
        RetrySafe engine = RetrySafe.builder(store).name("rabbit-inbox-it").build();
        transactional = TransactionalRetrySafe.of(engine.with(OperationPolicy.from(engine.policy())
                .retryAfter(RETRY_AFTER).build()));
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (queues != null) {
            queues.close();
        }
    }

    @AfterEach
    void stop() {
        consumers.forEach(RetrySafeRabbitConsumer::close);
    }

    @ParameterizedTest
    @EnumSource(Queues.Type.class)
    void everyMessagePublishedTwiceTakesEffectOnceInTheQueuesOrder(Queues.Type type) throws Exception {
        String queue = queues.declare("rs-inbox", type);
        List<String> ids = IntStream.range(0, 20).mapToObj(i -> "order-" + i).toList();
        for (int copy = 0; copy < 2; copy++) {
            for (String id : ids) {
                queues.publish(queue, id, "ship " + id);
            }
        }
        start(queue, (delivery, c, attempt) -> Effects.record(c, delivery, attempt, "it"), queue + ".dlq");
        await().atMost(BOUND).until(() -> results.size() == 40);

        assertThat(results.subList(0, 20)).allSatisfy(r -> assertThat(r).isEqualTo(new InboxResult.Processed(1)));
        assertThat(results.subList(20, 40)).allSatisfy(r -> assertThat(r).isInstanceOf(InboxResult.Replayed.class));
        assertThat(Effects.rows(ds, RabbitInbox.scope(consumerName, queue)))
                .containsExactlyElementsOf(ids.stream().map(id -> id + " ship " + id + " it").toList());
        stop();
        assertThat(queues.ready(queue)).as("each delivery acknowledged").isZero();
    }

    @ParameterizedTest
    @EnumSource(Queues.Type.class)
    void aHandlerFailingOnEveryAttemptIsDeadLetteredWithTheOriginalAndTheInboxHeaders(Queues.Type type)
            throws Exception {
        String queue = queues.declare("rs-inbox-fail", type);
        String deadLetters = queues.declare("rs-inbox-fail-dlq", type);
        queues.publish(queue, new AMQP.BasicProperties.Builder().messageId("pay-1").contentType("text/plain")
                .headers(Map.of("tenant", "acme", DeadLetterHeaders.REASON, "stale")).build(), "pay 100");
        start(queue, (delivery, c, attempt) -> {
            throw new IllegalStateException("the ledger refuses line\ntwo");
        }, deadLetters);
        await().atMost(BOUND).until(() -> results.size() == 1);

        assertThat(results.get(0)).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.HANDLER_FAILED);
            assertThat(d.attempts()).isEqualTo(2);
        });
        GetResponse dead = queues.take(deadLetters);
        assertThat(dead).as("the dead letter was in its queue before the original was acknowledged").isNotNull();
        assertThat(new String(dead.getBody(), UTF_8)).isEqualTo("pay 100");
        assertThat(dead.getProps().getMessageId()).isEqualTo("pay-1");
        assertThat(dead.getProps().getContentType()).isEqualTo("text/plain");
        Map<String, String> headers = dead.getProps().getHeaders().entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().toString()));
        assertThat(headers).containsEntry("tenant", "acme")
                .containsEntry(DeadLetterHeaders.REASON, "handler-failed")
                .containsEntry(DeadLetterHeaders.ATTEMPTS, "2")
                .containsEntry(DeadLetterHeaders.SCOPE, RabbitInbox.scope(consumerName, queue))
                .containsEntry(DeadLetterHeaders.MESSAGE_ID, "pay-1")
                .containsEntry(DeadLetterHeaders.ERROR, "java.lang.IllegalStateException: the ledger refuses line two")
                .containsEntry(DeadLetterHeaders.DELIVERY_COUNT, "1");
        if (type == Queues.Type.CLASSIC) {
            // A quorum dead-letter queue sets its own count when it delivers; the original's is never copied.
            assertThat(headers).doesNotContainKey(Deliveries.X_DELIVERY_COUNT);
        }
        stop();
        assertThat(queues.ready(queue)).as("the original was acknowledged").isZero();
    }

    @Test
    void aMessageWithoutAnIdIsDeadLetteredUnprocessed() throws Exception {
        String queue = queues.declare("rs-inbox-noid", Queues.Type.QUORUM);
        String deadLetters = queues.declare("rs-inbox-noid-dlq", Queues.Type.QUORUM);
        queues.publish(queue, (String) null, "who am I");
        List<String> handled = new CopyOnWriteArrayList<>();
        start(queue, (delivery, c, attempt) -> handled.add("ran"), deadLetters);
        await().atMost(BOUND).until(() -> results.size() == 1);

        assertThat(results.get(0)).isInstanceOfSatisfying(InboxResult.DeadLetter.class,
                d -> assertThat(d.reason()).isEqualTo(DeadLetterReason.MISSING_MESSAGE_ID));
        assertThat(handled).isEmpty();
        GetResponse dead = queues.take(deadLetters);
        assertThat(dead.getProps().getHeaders().get(DeadLetterHeaders.REASON).toString())
                .isEqualTo("missing-message-id");
    }

    @Test
    void aDeadLetterNoQueueTakesLeavesTheMessageUnacknowledgedUntilOneDoes() throws Exception {
        String queue = queues.declare("rs-inbox-nodlq", Queues.Type.CLASSIC);
        String deadLetters = queue + "-dead";
        queues.publish(queue, "pay-2", "pay 200");
        queues.publish(queue, "pay-3", "pay 300");
        start(queue, (delivery, c, attempt) -> {
            throw new IllegalStateException("always");
        }, deadLetters);
        await().atMost(BOUND).until(() -> results.stream().filter(InboxResult.RetryLater.class::isInstance).count() >= 2);
        assertThat(results).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(InboxResult.RetryLater.class,
                later -> assertThat(later.reason()).isEqualTo(RetryReason.DEAD_LETTER_FAILED)));

        queues.channel().queueDeclare(deadLetters, true, false, true, Map.of());
        await().atMost(BOUND).until(() -> results.stream().filter(InboxResult.DeadLetter.class::isInstance).count() == 2);
        assertThat(List.of(new String(queues.take(deadLetters).getBody(), UTF_8),
                new String(queues.take(deadLetters).getBody(), UTF_8)))
                .as("nothing lost, in the queue's order").containsExactly("pay 200", "pay 300");
        stop();
        assertThat(queues.ready(queue)).isZero();
        queues.channel().queueDelete(deadLetters);
    }

    @Test
    void retriesByBrokerRedeliveryAndMissingValuesAreRefused() {
        Inbox redelivering = Inbox.builder(transactional).retryStyle(RetryStyle.BROKER_REDELIVERY).build();
        assertThatThrownBy(() -> RabbitInbox.builder(redelivering, (delivery, c, attempt) -> { }))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be IN_PROCESS, but was BROKER_REDELIVERY");
        Inbox inbox = Inbox.builder(transactional).build();
        assertThatThrownBy(() -> RabbitInbox.builder(inbox, (delivery, c, attempt) -> { }).consumerName("billing")
                .build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("deadLetters must be set: a message given up must go somewhere, or the queue stops behind it");
        assertThatThrownBy(() -> RabbitInbox.builder(inbox, (delivery, c, attempt) -> { })
                .deadLetters(ConfirmedPublisher.of(queues.connection())).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("consumerName must be set: it is part of the scope rabbitmq:<consumer name>:<queue>");
    }

    /**
     * The scope is {@code rabbitmq:<consumer name>:<queue>}, at most 255 characters: a queue whose name
     * makes it longer is refused when the consumer starts, not at each of its messages.
     */
    @Test
    void aQueueWhoseScopeIsTooLongIsRefusedAtStart() throws Exception {
        String queue = TestRabbit.uniqueName("long-scope") + "-" + "q".repeat(230); // 254 characters: a valid name
        queues.channel().queueDeclare(queue, false, true, true, Map.of());
        try {
            Inbox inbox = Inbox.builder(transactional).build();
            RabbitInbox rabbit = RabbitInbox.builder(inbox, (delivery, c, attempt) -> { }).consumerName("billing")
                    .deadLetters(ConfirmedPublisher.of(queues.connection())).build();

            assertThatThrownBy(() -> consumers.add(RetrySafeRabbitConsumer.builder(queues.connection(), rabbit)
                    .queue(queue).start()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith("queue " + queue + " cannot be consumed by consumerName billing: the scope")
                    .hasMessageContaining("must have at most 255 characters, but had "
                            + ("rabbitmq:billing:" + queue).length());
            assertThat(queues.channel().queueDeclarePassive(queue).getConsumerCount()).as("nobody consumes it").isZero();
        } finally {
            queues.channel().queueDelete(queue);
        }
    }

    /** A consumer of {@code queue} whose dead letters go to the queue {@code deadLetters}. */
    private void start(String queue, DeliveryHandler handler, String deadLetters) throws Exception {
        consumerName = "billing-" + queue;
        Inbox inbox = Inbox.builder(transactional).maxAttempts(2).backoff(FAST).listener(new InboxListener() {
            @Override
            public void onResult(Delivery delivery, InboxResult result) {
                results.add(result);
            }
        }).build();
        RabbitInbox rabbit = RabbitInbox.builder(inbox, handler).consumerName(consumerName)
                .deadLetters(ConfirmedPublisher.of(queues.connection()), "", q -> deadLetters).build();
        consumers.add(RetrySafeRabbitConsumer.builder(queues.connection(), rabbit).queue(queue)
                .closeTimeout(Duration.ofSeconds(10)).start());
    }
}
