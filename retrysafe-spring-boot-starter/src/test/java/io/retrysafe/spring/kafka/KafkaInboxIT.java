package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.kafka.KafkaInbox;
import io.retrysafe.spring.BootLine;
import io.retrysafe.spring.InMemoryTracing;
import io.retrysafe.testservices.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code retrysafe.kafka.enabled=true} in a Spring Boot application with {@code @KafkaListener}s,
 * against a real Kafka broker (in this JVM, KRaft) and the real PostgreSQL: what the listener's
 * table holds, how often the listener ran, what reached the dead-letter topic, the meters. Retries and
 * dead letters are the application's {@code DefaultErrorHandler}'s ({@code dead-letters=error-handler}).
 */
@SpringBootTest(classes = {KafkaInboxTestApp.class, KafkaInboxIT.Tracing.class, KafkaInboxIT.TypedListener.class},
        webEnvironment = SpringBootTest.WebEnvironment.NONE,
        properties = {InMemoryTracing.WITHOUT_BOOTS_TRACING, "retrysafe.kafka.dead-letters=error-handler"})
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class KafkaInboxIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    static final String LEDGER = "rs_spring_kafka_ledger_" + SUFFIX;
    private static final String RECORDS = "rs_spring_kafka_inbox_" + SUFFIX;
    private static final String ORDERS = "orders-" + SUFFIX;
    private static final String FLAKY = "flaky-" + SUFFIX;
    private static final String POISON = "poison-" + SUFFIX;
    private static final String TYPED = "typed-" + SUFFIX;
    private static final String GROUP = "booking-" + SUFFIX;
    private static final Duration BOUND = Duration.ofSeconds(60);
    static final InMemoryTracing TRACING = new InMemoryTracing();

    /** The application's tracing: spans kept in memory. */
    @Configuration(proxyBeanMethods = false)
    static class Tracing {
        @Bean
        ObservationRegistry observationRegistry() {
            return TRACING.registry();
        }
    }

    /**
     * A listener whose values the deserializer turns into an object of the application's, which has
     * no bytes the inbox knows how to take.
     */
    @Configuration(proxyBeanMethods = false)
    static class TypedListener {
        @Bean
        Typed typed(JdbcTemplate jdbc) {
            return new Typed(jdbc);
        }
    }

    /** The value of {@link Typed}'s records. */
    public record Order(String text) {
    }

    public static final class OrderDeserializer implements Deserializer<Order> {
        @Override
        public Order deserialize(String topic, byte[] data) {
            return data == null ? null : new Order(new String(data, StandardCharsets.UTF_8));
        }
    }

    /** The dead-letter publisher's value serializer: the text of an {@link Order}, a string as itself. */
    public static final class AnyValueSerializer implements Serializer<Object> {
        @Override
        public byte[] serialize(String topic, Object data) {
            return data == null ? null : (data instanceof Order order ? order.text() : data.toString())
                    .getBytes(StandardCharsets.UTF_8);
        }
    }

    public static final class Typed {
        private final JdbcTemplate jdbc;

        Typed(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @KafkaListener(id = "typed", idIsGroup = false, topics = "${test.topic.typed}",
                properties = "value.deserializer=io.retrysafe.spring.kafka.KafkaInboxIT$OrderDeserializer")
        public void typed(ConsumerRecord<String, Order> record) {
            jdbc.update("INSERT INTO " + LEDGER + " (topic, message_id, payload) VALUES (?, ?, ?)", record.topic(),
                    header(record, "idempotency-key"), record.value().text());
        }
    }

    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    KafkaInboxTestApp.Listeners listeners;
    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        KafkaInboxTestApp.properties(registry, KAFKA, GROUP, RECORDS, LEDGER);
        registry.add("test.topic.orders", () -> ORDERS);
        registry.add("test.topic.flaky", () -> FLAKY);
        registry.add("test.topic.poison", () -> POISON);
        registry.add("test.topic.typed", () -> TYPED);
        registry.add("spring.kafka.producer.value-serializer", AnyValueSerializer.class::getName);
    }

    @BeforeAll
    static void topicsAndTable() throws Exception {
        KafkaInboxTestApp.topicsAndLedger(KAFKA, List.of(ORDERS, FLAKY, POISON, TYPED), 2, LEDGER);
    }

    @AfterAll
    static void dropTables() {
        KafkaInboxTestApp.dropTables(LEDGER, RECORDS);
    }

    @Test
    void everyMessagePublishedTwiceTakesEffectOnce() throws Exception {
        int messages = 30;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            // A producer that sends everything again (a retry after a lost acknowledgement): same ids, same payloads.
            for (int copy = 0; copy < 2; copy++) {
                for (int i = 0; i < messages; i++) {
                    send(producer, ORDERS, "order-" + i, "msg-" + SUFFIX + "-" + i, "book order " + i);
                }
            }
        }

        await().atMost(BOUND).until(() -> requests("replayed") >= messages);
        assertThat(requests("replayed")).isEqualTo(messages);
        assertThat(requests("executed")).isEqualTo(messages);
        List<String> ids = jdbc.queryForList("SELECT message_id FROM " + LEDGER + " WHERE topic = ?", String.class,
                ORDERS);
        assertThat(ids).as("one row per message").hasSize(messages).doesNotHaveDuplicates();
        for (int i = 0; i < messages; i++) {
            assertThat(listeners.calls.get("msg-" + SUFFIX + "-" + i)).as("listener calls of message %d", i).isEqualTo(1);
        }
        // The container went past every copy: offsets committed for all 2 × messages records.
        await().atMost(BOUND).until(() -> committedTotal(ORDERS) == 2L * messages);

        // Each copy is a span of its outcome, carrying the digest the logs show, never the message id.
        String id = "msg-" + SUFFIX + "-0";
        String digest = IdempotencyKey.of(KafkaInbox.SCOPE_PREFIX + GROUP + ":" + ORDERS, id).digest();
        await().atMost(BOUND).until(() -> spansOf(digest).size() == 2);
        assertThat(spansOf(digest)).extracting(SpanData::getName).containsOnly(BootLine.spanName("kafka " + ORDERS));
        assertThat(spansOf(digest)).extracting(span -> span.getAttributes().get(InMemoryTracing.KIND))
                .containsOnly("kafka");
        assertThat(spansOf(digest)).extracting(span -> span.getAttributes().get(InMemoryTracing.OUTCOME))
                .containsExactly("executed", "replayed");
        assertThat(TRACING.retrySafe()).allSatisfy(span -> span.getAttributes().forEach((name, value) ->
                assertThat(String.valueOf(value)).as(name.getKey()).doesNotContain("msg-" + SUFFIX)));
    }

    private static List<SpanData> spansOf(String digest) {
        return TRACING.retrySafe().stream().filter(s -> digest.equals(s.getAttributes().get(InMemoryTracing.DIGEST)))
                .toList();
    }

    @Test
    void aListenerThatFailsAfterItsWriteKeepsNothingIsRetriedAndTakesEffectOnce() throws Exception {
        String id = "msg-flaky-" + SUFFIX;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            send(producer, FLAKY, "order-f", id, "book order f");
        }

        await().atMost(BOUND).until(() -> listeners.calls.getOrDefault(id, 0) >= 3 && rows(FLAKY, id) == 1);
        assertThat(listeners.calls.get(id)).as("two failed calls, then one that committed").isEqualTo(3);
        assertThat(listeners.rowsSeenFromOutsideWhenFailing).as("the earlier calls' writes were rolled back")
                .containsExactly(0, 0);
        assertThat(rows(FLAKY, id)).isEqualTo(1);
        assertThat(readAll(FLAKY + ".DLT")).as("retried, not dead-lettered").isEmpty();
        await().atMost(BOUND).until(() -> committedTotal(FLAKY) == 1L);
    }

    @Test
    void aPoisonMessageAndAMessageWithoutIdGoToTheDeadLetterTopicAndNothingOfThemIsKept() throws Exception {
        String poisonId = "msg-poison-" + SUFFIX;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            send(producer, POISON, "order-p", poisonId, "poison");
            // No idempotency-key header: the listener must not run at all.
            producer.send(new ProducerRecord<>(POISON, "order-p", "no id")).get(30, TimeUnit.SECONDS);
        }

        // Both have the same key, so the same partition: the poison message's retries come first.
        await().atMost(BOUND).until(() -> readAll(POISON + ".DLT").size() >= 2);
        List<ConsumerRecord<String, String>> deadLetters = readAll(POISON + ".DLT");
        assertThat(deadLetters).extracting(ConsumerRecord::value).containsExactly("poison", "no id");
        assertThat(header(deadLetters.get(0), "kafka_dlt-exception-cause-fqcn"))
                .isEqualTo(IllegalStateException.class.getName());
        assertThat(header(deadLetters.get(1), "kafka_dlt-exception-cause-fqcn"))
                .as("dead-lettered at once: not retryable").isEqualTo(InvalidKeyException.class.getName());
        // The inbox's headers too, as with dead-letters=inbox; the attempts are the error handler's.
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("handler-failed");
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.ATTEMPTS))
                .isEqualTo(Integer.toString(1 + KafkaInboxTestApp.RETRIES));
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.MESSAGE_ID)).isEqualTo(poisonId);
        assertThat(header(deadLetters.get(1), DeadLetterHeaders.REASON)).isEqualTo("missing-message-id");
        assertThat(header(deadLetters.get(1), DeadLetterHeaders.ATTEMPTS)).isEqualTo("0");
        assertThat(listeners.calls.get(poisonId)).as("the first call and %d retries", KafkaInboxTestApp.RETRIES)
                .isEqualTo(1 + KafkaInboxTestApp.RETRIES);
        assertThat(listeners.calls).as("the listener never saw the record without id").doesNotContainKey("null");
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + LEDGER + " WHERE topic = ?", Integer.class, POISON))
                .as("every failed call rolled back").isZero();
        assertThat(requests("missing_key")).isEqualTo(1);
        await().atMost(BOUND).until(() -> committedTotal(POISON) == 2L);
    }

    @Test
    void aMessageIdReusedWithAnotherPayloadIsNotReplayedWhenTheValueIsAnObjectWithoutBytes() throws Exception {
        String id = "msg-typed-" + SUFFIX;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            send(producer, TYPED, "order-t", id, "book one chair");
            // The same id on another message: a producer that reuses ids.
            send(producer, TYPED, "order-t", id, "book two tables");
        }

        await().atMost(BOUND).until(() -> committedTotal(TYPED) == 2L);
        String digest = IdempotencyKey.of(KafkaInbox.SCOPE_PREFIX + GROUP + ":" + TYPED, id).digest();
        await().atMost(BOUND).until(() -> spansOf(digest).size() == 2);
        assertThat(spansOf(digest)).extracting(span -> span.getAttributes().get(InMemoryTracing.OUTCOME))
                .as("the second message is not taken for a redelivery of the first").doesNotContain("replayed");
        assertThat(readAll(TYPED + ".DLT")).extracting(ConsumerRecord::value).as("refused, for an operator to see")
                .contains("book two tables");
        assertThat(jdbc.queryForList("SELECT payload FROM " + LEDGER + " WHERE topic = ?", String.class, TYPED))
                .doesNotContain("book two tables");
    }

    private double requests(String outcome) {
        return meters.get("retrysafe.requests").tags("source", "kafka", "outcome", outcome).counter().count();
    }

    private int rows(String topic, String id) {
        return jdbc.queryForObject("SELECT count(*) FROM " + LEDGER + " WHERE topic = ? AND message_id = ?",
                Integer.class, topic, id);
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String key, String id, String value)
            throws Exception {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, key, value);
        record.headers().add("idempotency-key", id.getBytes(StandardCharsets.UTF_8));
        producer.send(record).get(30, TimeUnit.SECONDS);
    }

    private static long committedTotal(String topic) throws Exception {
        long total = 0;
        for (int p = 0; p < 2; p++) {
            Long offset = KAFKA.committedOffset(GROUP, new TopicPartition(topic, p));
            total += offset == null ? 0 : offset;
        }
        return total;
    }

    private static List<ConsumerRecord<String, String>> readAll(String topic) {
        try {
            return KafkaInboxTestApp.readAll(KAFKA, topic, BOUND);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static String header(ConsumerRecord<?, ?> record, String name) {
        return KafkaInboxTestApp.Listeners.header(record, name);
    }
}
