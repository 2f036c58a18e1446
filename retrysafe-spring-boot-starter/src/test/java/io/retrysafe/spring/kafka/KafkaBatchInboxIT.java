package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.testservices.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
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
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.TestPropertySource;

/**
 * Batch {@code @KafkaListener}s with {@code retrysafe.kafka.enabled=true}, against a real Kafka broker
 * (in this JVM, KRaft) and the real PostgreSQL. Each test publishes everything first and then starts
 * its listener, so the records reach it in batches: duplicates, records without a valid id, a reused
 * id and a record the listener fails on sit in the middle of a batch. Here Spring Kafka's error handler
 * retries and dead-letters ({@code dead-letters=error-handler}); {@link KafkaBatchInboxByInboxIT} runs
 * the same tests with {@code dead-letters=inbox}. The dead letters carry the inbox's headers in both.
 */
@SpringBootTest(classes = {KafkaInboxTestApp.class, KafkaBatchInboxIT.BatchListeners.class},
        webEnvironment = SpringBootTest.WebEnvironment.NONE)
@TestPropertySource(properties = "retrysafe.kafka.dead-letters=error-handler")
@DirtiesContext
class KafkaBatchInboxIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    static final String LEDGER = "rs_spring_kafka_batch_ledger_" + SUFFIX;
    private static final String RECORDS = "rs_spring_kafka_batch_inbox_" + SUFFIX;
    private static final String LIST = "batch-list-" + SUFFIX;
    private static final String PAYLOADS = "batch-payloads-" + SUFFIX;
    private static final String POLLED = "batch-polled-" + SUFFIX;
    private static final String POISON = "batch-poison-" + SUFFIX;
    private static final String PARTIAL = "batch-partial-" + SUFFIX;
    private static final String GROUP = "batch-booking-" + SUFFIX;
    private static final Duration BOUND = Duration.ofSeconds(60);

    @Configuration(proxyBeanMethods = false)
    static class BatchListeners {
        @Bean
        Batches batches(JdbcTemplate jdbc) {
            return new Batches(jdbc);
        }
    }

    /**
     * Batch listeners of the three shapes Spring Kafka offers, each started by its test. A record whose
     * value starts with {@code fail} makes the listener throw after booking the records before it.
     */
    public static final class Batches {
        private final JdbcTemplate jdbc;
        /** Records (by value) each listener call received, failed calls included. */
        final Map<String, Integer> seen = new ConcurrentHashMap<>();
        final List<Integer> batchSizes = new CopyOnWriteArrayList<>();

        Batches(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @KafkaListener(id = "batch-list", idIsGroup = false, topics = "${test.topic.list}", batch = "true",
                autoStartup = "false")
        public void list(List<ConsumerRecord<String, String>> records) {
            batchSizes.add(records.size());
            for (ConsumerRecord<String, String> record : records) {
                book(record.topic(), record.value());
            }
        }

        @KafkaListener(id = "batch-payloads", idIsGroup = false, topics = "${test.topic.payloads}", batch = "true",
                autoStartup = "false")
        public void payloads(List<String> payloads, @Header(KafkaHeaders.RECEIVED_TOPIC) List<String> topics) {
            batchSizes.add(payloads.size());
            for (int i = 0; i < payloads.size(); i++) {
                book(topics.get(i), payloads.get(i));
            }
        }

        @KafkaListener(id = "batch-polled", idIsGroup = false, topics = "${test.topic.polled}", batch = "true",
                autoStartup = "false")
        public void polled(ConsumerRecords<String, String> records) {
            batchSizes.add(records.count());
            for (ConsumerRecord<String, String> record : records) {
                book(record.topic(), record.value());
            }
        }

        @KafkaListener(id = "batch-poison", idIsGroup = false, topics = "${test.topic.batch-poison}", batch = "true",
                autoStartup = "false")
        public void poison(List<ConsumerRecord<String, String>> records) {
            list(records);
        }

        @KafkaListener(id = "batch-partial", idIsGroup = false, topics = "${test.topic.partial}", batch = "true",
                autoStartup = "false")
        public void partial(List<ConsumerRecord<String, String>> records) {
            list(records);
        }

        private void book(String topic, String value) {
            seen.merge(value, 1, Integer::sum);
            jdbc.update("INSERT INTO " + LEDGER + " (topic, payload) VALUES (?, ?)", topic, value);
            if (value.startsWith("fail")) {
                throw new IllegalStateException("cannot book " + value);
            }
        }
    }

    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    Batches batches;
    @Autowired
    KafkaListenerEndpointRegistry registry;
    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        KafkaInboxTestApp.properties(registry, KAFKA, GROUP, RECORDS, LEDGER);
        // The record listeners of the test application read topics of their own here.
        registry.add("test.topic.orders", () -> "batch-unused-orders-" + SUFFIX);
        registry.add("test.topic.flaky", () -> "batch-unused-flaky-" + SUFFIX);
        registry.add("test.topic.poison", () -> "batch-unused-poison-" + SUFFIX);
        registry.add("test.topic.batch-poison", () -> POISON);
        registry.add("test.topic.list", () -> LIST);
        registry.add("test.topic.payloads", () -> PAYLOADS);
        registry.add("test.topic.polled", () -> POLLED);
        registry.add("test.topic.partial", () -> PARTIAL);
    }

    @BeforeAll
    static void topicsAndTable() throws Exception {
        KafkaInboxTestApp.topicsAndLedger(KAFKA, List.of(LIST, PAYLOADS, POLLED, POISON, PARTIAL), 1, LEDGER);
    }

    @AfterAll
    static void dropTables() {
        KafkaInboxTestApp.dropTables(LEDGER, RECORDS);
    }

    @Test
    void everyMessageOfABatchPublishedTwiceTakesEffectOnceInEachListenerShape() throws Exception {
        int messages = 20;
        for (String topic : List.of(LIST, PAYLOADS, POLLED)) {
            try (KafkaProducer<String, String> producer = KAFKA.producer()) {
                // Each message twice in a row: the copy sits in the same batch as the original.
                for (int i = 0; i < messages; i++) {
                    for (int copy = 0; copy < 2; copy++) {
                        send(producer, topic, topic + "-msg-" + i, topic + " order " + i);
                    }
                }
            }
        }
        for (String id : List.of("batch-list", "batch-payloads", "batch-polled")) {
            registry.getListenerContainer(id).start();
        }

        for (String topic : List.of(LIST, PAYLOADS, POLLED)) {
            await().atMost(BOUND).until(() -> committed(topic) == 2L * messages);
            List<String> booked = payloads(topic);
            assertThat(booked).as("one row per message on %s", topic).hasSize(messages).doesNotHaveDuplicates();
            for (int i = 0; i < messages; i++) {
                assertThat(batches.seen.get(topic + " order " + i)).as("listener calls with %s order %d", topic, i)
                        .isEqualTo(1);
            }
        }
        assertThat(batches.batchSizes).as("the listener got batches, not single records").anyMatch(size -> size > 1);
        assertThat(meters.get("retrysafe.requests").tags("source", "kafka", "outcome", "replayed").counter().count())
                .isGreaterThanOrEqualTo(3.0 * messages);
    }

    @Test
    void recordsWithoutAValidIdOrWithAReusedIdInsideABatchGoToTheDeadLetterTopicAndTheRestTakesEffectOnce()
            throws Exception {
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            send(producer, POISON, "p-1", "poison ok 1");
            send(producer, POISON, "p-2", "poison ok 2");
            producer.send(new ProducerRecord<>(POISON, "no id")).get(30, TimeUnit.SECONDS);
            send(producer, POISON, "p-3", "poison ok 3");
            send(producer, POISON, "x".repeat(300), "too long an id");
            send(producer, POISON, "p-4", "poison ok 4");
            send(producer, POISON, "p-1", "another message under p-1's id");
            send(producer, POISON, "p-5", "poison ok 5");
        }
        registry.getListenerContainer("batch-poison").start();

        await().atMost(BOUND).until(() -> committed(POISON) == 8L);
        assertThat(payloads(POISON)).containsExactly("poison ok 1", "poison ok 2", "poison ok 3", "poison ok 4",
                "poison ok 5");
        assertThat(batches.seen).doesNotContainKeys("no id", "too long an id", "another message under p-1's id");
        List<ConsumerRecord<String, String>> deadLetters = readAll(POISON + ".DLT");
        assertThat(deadLetters).extracting(ConsumerRecord::value)
                .containsExactly("no id", "too long an id", "another message under p-1's id");
        assertThat(deadLetters).extracting(record -> header(record, DeadLetterHeaders.REASON))
                .containsExactly("missing-message-id", "invalid-message-id", "fingerprint-mismatch");
        assertThat(deadLetters).extracting(record -> header(record, DeadLetterHeaders.ATTEMPTS)).containsOnly("0");
        assertThat(deadLetters).extracting(record -> header(record, DeadLetterHeaders.SCOPE))
                .containsOnly("kafka:" + GROUP + ":" + POISON);
        assertThat(deadLetters).extracting(record -> header(record, DeadLetterHeaders.MESSAGE_ID))
                .containsExactly(null, "x".repeat(300), "p-1");
        assertSpringsHeaders(deadLetters);
        assertThat(batches.seen.values()).as("nothing retried: the listener never failed").containsOnly(1);
    }

    /**
     * Spring Kafka's own headers on the dead letters of the poison test: its recoverer names the batch
     * listener's exception, whose message names the reason.
     */
    void assertSpringsHeaders(List<ConsumerRecord<String, String>> deadLetters) {
        assertThat(deadLetters).extracting(record -> header(record, "kafka_dlt-exception-message"))
                .satisfiesExactly(
                        message -> assertThat(message).contains(InvalidKeyException.class.getName()),
                        message -> assertThat(message).contains(InvalidKeyException.class.getName()),
                        message -> assertThat(message).contains(FingerprintMismatchException.class.getName()));
    }

    @Test
    void aListenerFailingOnRecordKOfABatchCommitsTheRecordsBeforeItRecoversItAndRedeliversTheRest()
            throws Exception {
        int messages = 10;
        int failing = 4;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            for (int i = 0; i < messages; i++) {
                send(producer, PARTIAL, "partial-" + i, (i == failing ? "fail " : "partial ") + i);
            }
        }
        registry.getListenerContainer("batch-partial").start();

        await().atMost(BOUND).until(() -> committed(PARTIAL) == messages);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < messages; i++) {
            if (i != failing) {
                expected.add("partial " + i);
            }
        }
        assertThat(payloads(PARTIAL)).as("every other record once, in order; nothing of the failing one")
                .containsExactlyElementsOf(expected);
        List<ConsumerRecord<String, String>> deadLetters = readAll(PARTIAL + ".DLT");
        assertThat(deadLetters).extracting(ConsumerRecord::value).containsExactly("fail " + failing);
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.REASON)).isEqualTo("handler-failed");
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.ERROR))
                .isEqualTo(IllegalStateException.class.getName() + ": cannot book fail " + failing);
        assertThat(header(deadLetters.get(0), DeadLetterHeaders.POSITION)).isEqualTo(PARTIAL + "-0@" + failing);
        assertThat(batches.seen.get("fail " + failing)).as("its first call and its retries, then the recoverer")
                .isGreaterThanOrEqualTo(1 + KafkaInboxTestApp.RETRIES);
    }

    private List<String> payloads(String topic) {
        return jdbc.queryForList("SELECT payload FROM " + LEDGER + " WHERE topic = ? ORDER BY id", String.class, topic);
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String id, String value)
            throws Exception {
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, value);
        record.headers().add("idempotency-key", id.getBytes(StandardCharsets.UTF_8));
        producer.send(record).get(30, TimeUnit.SECONDS);
    }

    private static long committed(String topic) throws Exception {
        Long offset = KAFKA.committedOffset(GROUP, new TopicPartition(topic, 0));
        return offset == null ? 0 : offset;
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
