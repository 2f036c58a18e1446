package io.retrysafe.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.tck.ContractHandler;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The inbox contract's dying consumer on RabbitMQ: a real {@link RetrySafeRabbitConsumer} whose inbox
 * listener ({@link Effects#holdAfterCommit()}) blocks once the first message committed, before the
 * consumer acknowledges it. {@link RabbitInboxContractIT} kills it with SIGKILL.
 *
 * <pre>
 * RabbitContractChild AMQP_URI QUEUE CONSUMER_NAME SCOPE PG_URL PG_USER PG_PASSWORD STORE_TABLE
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class RabbitContractChild {

    private RabbitContractChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            throw new IllegalArgumentException("usage: RabbitContractChild AMQP_URI QUEUE CONSUMER_NAME SCOPE PG_URL "
                    + "PG_USER PG_PASSWORD STORE_TABLE, but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(args[4]);
        dataSource.setUser(args[5]);
        dataSource.setPassword(args[6]);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
                .table(args[7]).build();
        ContractHandler work = Effects.childHandler(args[3]);
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("rabbit-contract-child")
                .build())).listener(Effects.holdAfterCommit()).build();
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(args[0]);
        Connection connection = factory.newConnection("retrysafe-rabbit-contract-child");
        RabbitInbox rabbit = RabbitInbox.builder(inbox,
                        (delivery, c, attempt) -> work.handle(delivery.getBody(), c, attempt))
                .consumerName(args[2])
                .messageIds(MessageIds.header(RabbitInboxContractIT.ID_HEADER))
                .deadLetters(ConfirmedPublisher.of(connection)).build();
        RetrySafeRabbitConsumer.builder(connection, rabbit).queue(args[1]).start();
        new CountDownLatch(1).await();
    }
}
