package io.retrysafe.spring.rabbit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * An application as a user writes it: {@code @RabbitListener}s writing with a {@code JdbcTemplate},
 * Boot's auto-configured container factory, queues declared as beans, and
 * {@code retrysafe.rabbit.enabled=true} (set by the tests). The ledger table has no unique index: a
 * message handled twice shows as two rows.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class RabbitInboxTestApp {
    /** Printed by the crash child's listener once its transaction has committed. */
    public static final String COMMITTED = "COMMITTED";

    @Bean
    MeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }

    /** A quorum queue: it counts deliveries. */
    @Bean
    Queue orders(@Value("${test.queue.orders}") String name) {
        return QueueBuilder.durable(name).quorum().build();
    }

    @Bean
    Queue poison(@Value("${test.queue.poison}") String name) {
        return QueueBuilder.durable(name).build();
    }

    /** The dead-letter queues, by the default routing key {@code <queue>.dlq}. */
    @Bean
    Queue ordersDeadLetters(@Value("${test.queue.orders}") String name) {
        return QueueBuilder.durable(name + ".dlq").build();
    }

    @Bean
    Queue poisonDeadLetters(@Value("${test.queue.poison}") String name) {
        return QueueBuilder.durable(name + ".dlq").build();
    }

    @Bean
    Listeners listeners(JdbcTemplate jdbc, @Value("${test.ledger}") String ledger,
            @Value("${test.crash-after-commit:false}") boolean crashAfterCommit) {
        return new Listeners(jdbc, ledger, crashAfterCommit);
    }

    /** The application's listeners. */
    public static final class Listeners {
        private final JdbcTemplate jdbc;
        private final String ledger;
        private final boolean crashAfterCommit;
        /** Listener calls per message id (or body, for a message without one), failed ones included. */
        final Map<String, Integer> calls = new ConcurrentHashMap<>();

        Listeners(JdbcTemplate jdbc, String ledger, boolean crashAfterCommit) {
            this.jdbc = jdbc;
            this.ledger = ledger;
            this.crashAfterCommit = crashAfterCommit;
        }

        @RabbitListener(id = "orders", queues = "${test.queue.orders}")
        public void orders(Message message) {
            book(message);
            if (crashAfterCommit) {
                // After the database commit, before the call returns to the container (and its acknowledgement).
                TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                    @Override
                    public void afterCommit() {
                        System.out.println(COMMITTED + " " + message.getMessageProperties().getMessageId());
                        System.out.flush();
                        try {
                            new CountDownLatch(1).await();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        Runtime.getRuntime().halt(4);
                    }
                });
            }
        }

        /** Writes, then always fails. */
        @RabbitListener(id = "poison", queues = "${test.queue.poison}")
        public void poison(Message message) {
            book(message);
            throw new IllegalStateException("the warehouse refuses " + body(message));
        }

        private void book(Message message) {
            String id = message.getMessageProperties().getMessageId();
            calls.merge(id != null ? id : body(message), 1, Integer::sum);
            jdbc.update("INSERT INTO " + ledger + " (queue, message_id, payload) VALUES (?, ?, ?)",
                    message.getMessageProperties().getConsumerQueue(), id, body(message));
        }

        private static String body(Message message) {
            return new String(message.getBody(), StandardCharsets.UTF_8);
        }
    }
}
