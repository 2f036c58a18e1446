package io.retrysafe.kafka;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.KafkaBroker;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A consumer that dies between its database commit and its offset commit: it runs the real
 * {@link IdempotentConsumerLoop} (classic protocol), and when the first record's transaction has
 * committed, the engine's listener (called after the commit, before {@code process} returns to the
 * loop) prints {@value #COMMITTED} and the message id, then blocks the consumer's thread for good.
 * The loop never reaches its {@code commitSync}; {@link IdempotentConsumerLoopIT} kills the process
 * with SIGKILL.
 *
 * <pre>
 * KafkaCrashChild BOOTSTRAP GROUP TOPIC PG_URL PG_USER PG_PASSWORD STORE_TABLE
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class KafkaCrashChild {
    static final String COMMITTED = "COMMITTED";
    static final String CONSUMER_NAME = "child";

    private static final CountDownLatch NEVER = new CountDownLatch(1);

    private KafkaCrashChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            throw new IllegalArgumentException("usage: KafkaCrashChild BOOTSTRAP GROUP TOPIC PG_URL PG_USER PG_PASSWORD"
                    + " STORE_TABLE, but was " + args.length + " arguments");
        }
        haltWhenStdinCloses();
        String bootstrap = args[0];
        String group = args[1];
        String topic = args[2];
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(args[3]);
        dataSource.setUser(args[4]);
        dataSource.setPassword(args[5]);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
                .table(args[6]).build();

        RetrySafeListener blockAfterCommit = new RetrySafeListener() {
            @Override
            public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                if (outcome instanceof Outcome.Executed) {
                    System.out.println(COMMITTED + " " + key.value());
                    System.out.flush();
                    try {
                        NEVER.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    Runtime.getRuntime().halt(4); // never reached unless interrupted: still no offset commit
                }
            }
        };
        TransactionalRetrySafe inbox = TransactionalRetrySafe.of(
                RetrySafe.builder(store).name("kafka-crash-child").listener(blockAfterCommit).build());

        Map<String, Object> producerConfig = new HashMap<>();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig, new StringSerializer(),
                new StringSerializer());
        IdempotentRecordProcessor<String, String> processor = IdempotentRecordProcessor
                .<String, String>builder(inbox, group, (record, connection, attempt) -> Ledger.insert(connection, record,
                        CONSUMER_NAME))
                .deadLetters(DeadLetterPublisher.of(producer))
                .build();
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                KafkaBroker.consumerConfig(bootstrap, group, GroupProtocol.CLASSIC, 10),
                new StringDeserializer(), new StringDeserializer());
        IdempotentConsumerLoop.builder(consumer, processor).topics(topic)
                .pollTimeout(Duration.ofMillis(200)).build().run();
        System.out.println("NOT " + COMMITTED + ": the loop returned");
        System.out.flush();
        System.exit(2);
    }

    private static void haltWhenStdinCloses() {
        Thread watchdog = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() != -1) {
                    // the parent never writes; only end of stream matters
                }
            } catch (IOException ignored) {
                // a broken pipe means the same as end of stream
            }
            Runtime.getRuntime().halt(3);
        }, "kafka-crash-child-stdin-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }
}
