package io.retrysafe.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The broker side of {@link RetrySafeRabbitConsumer} and {@link ConfirmedPublisher}, on the shared RabbitMQ. */
class RabbitConsumerIT {
    private static final Duration BOUND = Duration.ofSeconds(30);

    private static Queues queues;

    @BeforeAll
    static void connect() throws IOException {
        queues = Queues.open("retrysafe-rabbit-consumer-it");
    }

    @AfterAll
    static void disconnect() throws Exception {
        if (queues != null) {
            queues.close();
        }
    }

    @Test
    void aQueueThatDoesNotExistIsRefusedAtStart() {
        assertThatThrownBy(() -> RetrySafeRabbitConsumer.builder(queues.connection(),
                (queue, delivery) -> Settlement.ACK, "it").queue("retrysafe-no-such-queue").start())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("queue retrysafe-no-such-queue does not exist");
    }

    @Test
    void aDeliveryNotDoneIsProcessedAgainBeforeTheNextOneAndEachIsAcknowledgedOnceDone() throws Exception {
        for (Queues.Type type : Queues.Type.values()) {
            String queue = queues.declare("rs-consumer", type);
            for (String body : List.of("m1", "m2", "m3")) {
                queues.publish(queue, body, body);
            }
            List<String> seen = new CopyOnWriteArrayList<>();
            AtomicInteger m1Calls = new AtomicInteger();
            DeliveryProcessor processor = (q, delivery) -> {
                String body = new String(delivery.getBody(), UTF_8);
                seen.add(body);
                if (body.equals("m1") && m1Calls.incrementAndGet() < 3) {
                    return new Settlement.Retry(Duration.ofMillis(20), "not yet");
                }
                return Settlement.ACK;
            };
            try (RetrySafeRabbitConsumer consumer = RetrySafeRabbitConsumer.builder(queues.connection(), processor, "it")
                    .queue(queue).start()) {
                await().atMost(BOUND).until(() -> seen.size() == 5);
            }
            assertThat(seen).as(type + " queue").containsExactly("m1", "m1", "m1", "m2", "m3");
            assertThat(queues.ready(queue)).as("every delivery acknowledged: none came back on close").isZero();
        }
    }

    @Test
    void closingWhileADeliveryIsNotDoneReturnsItAndTheOnesBehindItToTheQueue() throws Exception {
        String queue = queues.declare("rs-consumer-close", Queues.Type.CLASSIC);
        queues.publish(queue, "m1", "m1");
        queues.publish(queue, "m2", "m2");
        AtomicInteger calls = new AtomicInteger();
        RetrySafeRabbitConsumer consumer = RetrySafeRabbitConsumer.builder(queues.connection(), (q, delivery) -> {
            calls.incrementAndGet();
            return new Settlement.Retry(Duration.ofMinutes(1), "the database is down");
        }, "it").queue(queue).closeTimeout(Duration.ofSeconds(5)).start();
        await().atMost(BOUND).until(() -> calls.get() == 1);
        consumer.close();

        // The broker puts a closed channel's unacknowledged deliveries back in the queue's own time: a count read
        // at once on another channel may not hold them yet. One that never comes back fails the wait.
        await().atMost(BOUND).until(() -> queues.ready(queue) == 2);
        GetResponse first = queues.take(queue);
        assertThat(new String(first.getBody(), UTF_8)).isEqualTo("m1");
        assertThat(first.getEnvelope().isRedeliver()).isTrue();
    }

    @Test
    void aQuorumQueueCountsDeliveriesAndAClassicQueueOnlyTellsTheFirst() throws Exception {
        for (Queues.Type type : Queues.Type.values()) {
            String queue = queues.declare("rs-count", type);
            queues.publish(queue, "m1", "m1");
            Map<Integer, Integer> counts = new ConcurrentHashMap<>();
            AtomicInteger deliveries = new AtomicInteger();
            var channel = queues.connection().createChannel();
            channel.basicQos(1);
            channel.basicConsume(queue, false, (tag, delivery) -> {
                int n = deliveries.incrementAndGet();
                counts.put(n, Deliveries.deliveryCount(delivery));
                channel.basicNack(delivery.getEnvelope().getDeliveryTag(), false, n < 3);
            }, tag -> { });
            await().atMost(BOUND).until(() -> counts.size() == 3);
            channel.close();

            if (type == Queues.Type.QUORUM) {
                assertThat(counts).containsExactlyInAnyOrderEntriesOf(Map.of(1, 1, 2, 2, 3, 3));
            } else {
                assertThat(counts).containsExactlyInAnyOrderEntriesOf(Map.of(1, 1, 2, 0, 3, 0));
            }
        }
    }

    @Test
    void aConfirmedPublishReturnsOnceTheQueueHasTheMessage() throws Exception {
        String queue = queues.declare("rs-confirmed", Queues.Type.QUORUM);
        try (ConfirmedPublisher publisher = ConfirmedPublisher.of(queues.connection())) {
            publisher.publish("", queue, new AMQP.BasicProperties.Builder().messageId("a").build(), "dead".getBytes(UTF_8));
        }
        GetResponse got = queues.take(queue);
        assertThat(got).isNotNull();
        assertThat(new String(got.getBody(), UTF_8)).isEqualTo("dead");
    }

    @Test
    void aMessageNoQueueTakesIsAFailedPublishNotADroppedOne() throws Exception {
        String queue = queues.declare("rs-confirmed-ok", Queues.Type.CLASSIC);
        try (ConfirmedPublisher publisher = ConfirmedPublisher.of(queues.connection())) {
            assertThatThrownBy(() -> publisher.publish("", "retrysafe-no-such-queue", null, new byte[0]))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("no queue took the message")
                    .hasMessageContaining("312 NO_ROUTE");
            // The publisher is still usable after a returned message, and after a refused exchange.
            assertThatThrownBy(() -> publisher.publish("retrysafe-no-such-exchange", queue, null, new byte[0]))
                    .isInstanceOf(IOException.class);
            publisher.publish("", queue, null, "ok".getBytes(UTF_8));
        }
        assertThat(queues.take(queue)).extracting(GetResponse::getBody).isEqualTo("ok".getBytes(UTF_8));
    }
}
