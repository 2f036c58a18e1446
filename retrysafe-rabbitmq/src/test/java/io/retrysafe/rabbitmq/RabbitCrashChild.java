package io.retrysafe.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.ChildJvm;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A consumer that dies between its database commit and its acknowledgement: it runs a real
 * {@link RetrySafeRabbitConsumer} on a {@link RabbitInbox}, and when the first message's transaction
 * has committed, the engine's listener (called after the commit, before the inbox returns to the
 * consumer) prints {@value #COMMITTED} and the message id, then blocks the worker for good. The
 * consumer never reaches its {@code basicAck}; {@link RabbitCrashIT} kills the process with SIGKILL.
 *
 * <pre>
 * RabbitCrashChild AMQP_URI QUEUE CONSUMER_NAME PG_URL PG_USER PG_PASSWORD
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class RabbitCrashChild {
    static final String COMMITTED = "COMMITTED";
    static final String CHILD = "child";

    private RabbitCrashChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            throw new IllegalArgumentException("usage: RabbitCrashChild AMQP_URI QUEUE CONSUMER_NAME PG_URL PG_USER"
                    + " PG_PASSWORD, but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(args[3]);
        dataSource.setUser(args[4]);
        dataSource.setPassword(args[5]);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
                .table(Effects.STORE_TABLE).build();
        RetrySafeListener blockAfterCommit = new RetrySafeListener() {
            @Override
            public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                if (outcome instanceof Outcome.Executed) {
                    System.out.println(COMMITTED + " " + key.value());
                    System.out.flush();
                    try {
                        new CountDownLatch(1).await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    Runtime.getRuntime().halt(4); // never reached unless interrupted: still no acknowledgement
                }
            }
        };
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(
                RetrySafe.builder(store).name("rabbit-crash-child").listener(blockAfterCommit).build())).build();

        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(args[0]);
        Connection connection = factory.newConnection("retrysafe-rabbit-crash-child");
        RabbitInbox rabbit = RabbitInbox.builder(inbox,
                (delivery, c, attempt) -> Effects.record(c, delivery, attempt, CHILD))
                .consumerName(args[2])
                .deadLetters(ConfirmedPublisher.of(connection)).build();
        RetrySafeRabbitConsumer.builder(connection, rabbit).queue(args[1]).start();
        new CountDownLatch(1).await();
    }
}
