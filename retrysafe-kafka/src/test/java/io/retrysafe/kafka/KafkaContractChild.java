package io.retrysafe.kafka;

import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.tck.ContractHandler;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.KafkaBroker;
import java.time.Duration;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The inbox contract's dying consumer on Kafka: the real {@link RetrySafeKafkaConsumer} (classic
 * protocol) whose inbox listener ({@link Effects#holdAfterCommit()}) blocks once the first record
 * committed, before the loop commits its offset. {@link KafkaInboxContractIT} kills it with SIGKILL.
 *
 * <pre>
 * KafkaContractChild BOOTSTRAP GROUP TOPIC SCOPE PG_URL PG_USER PG_PASSWORD STORE_TABLE
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class KafkaContractChild {

    private KafkaContractChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            throw new IllegalArgumentException("usage: KafkaContractChild BOOTSTRAP GROUP TOPIC SCOPE PG_URL PG_USER "
                    + "PG_PASSWORD STORE_TABLE, but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        String bootstrap = args[0];
        String group = args[1];
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(args[4]);
        dataSource.setUser(args[5]);
        dataSource.setPassword(args[6]);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
                .table(args[7]).build();
        ContractHandler work = Effects.childHandler(args[3]);
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("kafka-contract-child")
                .build())).listener(Effects.holdAfterCommit()).build();
        KafkaInbox<byte[], byte[]> processor = KafkaInbox.<byte[], byte[]>builder(
                        inbox, (record, connection, attempt) -> work.handle(record.value(), connection, attempt))
                .consumerGroup(group)
                .deadLetters(DeadLetterPublisher.of(KafkaInboxContractIT.producer(bootstrap)))
                .build();
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                KafkaBroker.consumerConfig(bootstrap, group, GroupProtocol.CLASSIC, 10),
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
        RetrySafeKafkaConsumer.builder(consumer, processor).topics(args[2]).pollTimeout(Duration.ofMillis(200))
                .build().run();
        System.out.println("NOT " + Effects.COMMITTED + ": the loop returned");
        System.out.flush();
        System.exit(2);
    }
}
