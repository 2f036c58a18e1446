package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Backoff;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.testservices.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A failing {@code @KafkaListener} in an application that sets only {@code retrysafe.kafka.enabled}
 * and the back-off, and declares no error handler: the listener runs {@code max-attempts} times with
 * the configured back-off between, and its dead letter carries the inbox's headers with the values the
 * inbox contract checks on every broker. {@link KafkaDeadLettersByErrorHandlerIT} runs the same test
 * with {@code dead-letters=error-handler}.
 */
@SpringBootTest(classes = KafkaDeadLettersIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
@DirtiesContext
class KafkaDeadLettersIT {
    @RegisterExtension
    static final KafkaBroker KAFKA = new KafkaBroker();

    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private static final String RECORDS = "rs_spring_kafka_dlt_inbox_" + SUFFIX;
    private static final String TOPIC = "dlt-orders-" + SUFFIX;
    private static final String GROUP = "dlt-booking-" + SUFFIX;
    /** {@code retrysafe.kafka.backoff} and {@code .max-backoff} below; 3 attempts is the default. */
    static final Backoff BACKOFF = Backoff.exponential(Duration.ofMillis(300), Duration.ofMillis(1000));
    private static final int MAX_ATTEMPTS = 3;
    private static final Duration BOUND = Duration.ofSeconds(60);

    /** An application with one listener that always fails, and no error handler of its own. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        FailingListener failingListener() {
            return new FailingListener();
        }
    }

    public static final class FailingListener {
        /** When each call began. */
        final List<Long> callNanos = new CopyOnWriteArrayList<>();

        @KafkaListener(id = "dlt-failing", idIsGroup = false, topics = "${test.topic.failing}")
        public void book(ConsumerRecord<String, String> record) {
            callNanos.add(System.nanoTime());
            throw new IllegalStateException("cannot book " + record.value());
        }
    }

    @Autowired
    FailingListener listener;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        KafkaInboxTestApp.properties(registry, KAFKA, GROUP, RECORDS, "unused_ledger_" + SUFFIX);
        registry.add("test.topic.failing", () -> TOPIC);
        registry.add("retrysafe.kafka.backoff", () -> BACKOFF.initial().toMillis() + "ms");
        registry.add("retrysafe.kafka.max-backoff", () -> BACKOFF.max().toMillis() + "ms");
    }

    @BeforeAll
    static void topics() throws Exception {
        KAFKA.createTopic(TOPIC, 1);
        KAFKA.createTopic(TOPIC + ".DLT", 1);
    }

    @AfterAll
    static void dropTables() {
        KafkaInboxTestApp.dropTables(RECORDS);
    }

    @Test
    void aFailingListenerIsRetriedWithTheBackoffThenDeadLetteredWithTheInboxHeaders() throws Exception {
        String id = "msg-" + SUFFIX;
        try (KafkaProducer<String, String> producer = KAFKA.producer()) {
            ProducerRecord<String, String> record = new ProducerRecord<>(TOPIC, "order-1", "order 1");
            record.headers().add("idempotency-key", id.getBytes(StandardCharsets.UTF_8));
            record.headers().add("x-trace", "t-1".getBytes(StandardCharsets.UTF_8));
            producer.send(record).get(30, TimeUnit.SECONDS);
        }

        await().atMost(BOUND).until(() -> !KafkaInboxTestApp.readAll(KAFKA, TOPIC + ".DLT", BOUND).isEmpty());
        List<ConsumerRecord<String, String>> deadLetters = KafkaInboxTestApp.readAll(KAFKA, TOPIC + ".DLT", BOUND);

        assertThat(deadLetters).hasSize(1);
        ConsumerRecord<String, String> deadLetter = deadLetters.get(0);
        assertThat(deadLetter.key()).isEqualTo("order-1");
        assertThat(deadLetter.value()).isEqualTo("order 1");
        assertThat(header(deadLetter, "idempotency-key")).isEqualTo(id);
        assertThat(header(deadLetter, "x-trace")).isEqualTo("t-1");
        assertThat(header(deadLetter, DeadLetterHeaders.REASON)).isEqualTo(DeadLetterReason.HANDLER_FAILED.headerValue());
        assertThat(header(deadLetter, DeadLetterHeaders.ATTEMPTS)).isEqualTo(Integer.toString(MAX_ATTEMPTS));
        assertThat(header(deadLetter, DeadLetterHeaders.SCOPE)).isEqualTo("kafka:" + GROUP + ":" + TOPIC);
        assertThat(header(deadLetter, DeadLetterHeaders.POSITION)).isEqualTo(TOPIC + "-0@0");
        assertThat(header(deadLetter, DeadLetterHeaders.ERROR))
                .isEqualTo(IllegalStateException.class.getName() + ": cannot book order 1");
        assertThat(header(deadLetter, DeadLetterHeaders.MESSAGE_ID)).isEqualTo(id);
        assertTransportHeaders(deadLetter);

        assertThat(listener.callNanos).as("listener calls").hasSize(MAX_ATTEMPTS);
        for (int retry = 1; retry < MAX_ATTEMPTS; retry++) {
            assertThat(Duration.ofNanos(listener.callNanos.get(retry) - listener.callNanos.get(retry - 1)))
                    .as("the wait before retry %d", retry).isGreaterThanOrEqualTo(BACKOFF.cap(retry));
        }
    }

    /** Headers of the dead letter besides the inbox's: with {@code dead-letters=inbox}, none of Spring Kafka's. */
    void assertTransportHeaders(ConsumerRecord<String, String> deadLetter) {
        assertThat(deadLetter.headers()).noneMatch(header -> header.key().startsWith("kafka_dlt-"));
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        return KafkaInboxTestApp.Listeners.header(record, name);
    }
}
