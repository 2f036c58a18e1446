package io.retrysafe.nats;

import io.nats.client.Connection;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A consumer process that dies in the middle of a message: it binds a pull consumer with an
 * {@link NatsInbox}, and on the first message prints a line and blocks until
 * {@link NatsCrashIT} kills it with SIGKILL.
 *
 * <pre>
 * NatsCrashChild after-commit|inside-handler NATS_URL STREAM DURABLE PG_URL PG_USER PG_PASSWORD
 * </pre>
 *
 * <ul>
 * <li>{@code after-commit}: the processor's test hook, right after the transaction with the effect
 *     and the message id committed and before the acknowledgement, prints {@value #COMMITTED}.
 * <li>{@code inside-handler}: the handler, after its write and before the commit, prints
 *     {@value #INSIDE}.
 * </ul>
 * Each line is followed by the message's stream sequence. Should the test JVM die first, the child
 * notices its stdin closing and halts, so no child outlives the build.
 */
public final class NatsCrashChild {
    static final String COMMITTED = "COMMITTED";
    static final String INSIDE = "INSIDE";

    private static final CountDownLatch NEVER = new CountDownLatch(1);

    private NatsCrashChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            throw new IllegalArgumentException("usage: NatsCrashChild after-commit|inside-handler NATS_URL STREAM"
                    + " DURABLE PG_URL PG_USER PG_PASSWORD, but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        String mode = args[0];
        if (!mode.equals("after-commit") && !mode.equals("inside-handler")) {
            throw new IllegalArgumentException("mode must be after-commit or inside-handler, but was " + mode);
        }
        JdbcIdempotencyStore store = store(args[4], args[5], args[6], Effects.STORE_TABLE);
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("crash-child").build()))
                .retryStyle(RetryStyle.BROKER_REDELIVERY).build();
        NatsInbox.Builder processor = NatsInbox.builder(inbox, (msg, c, attempt) -> {
            Effects.record(c, msg, attempt);
            if (mode.equals("inside-handler")) {
                blockAfterSaying(INSIDE, msg);
            }
        });
        Connection nats = Nats.connect(new Options.Builder().server(args[1]).connectionName("retrysafe-crash-child")
                .connectionTimeout(Duration.ofSeconds(10)).build());
        processor.deadLetters(nats.jetStream(), args[2] + ".dlq." + args[3]);
        if (mode.equals("after-commit")) {
            processor.afterCommit(msg -> blockAfterSaying(COMMITTED, msg));
        }
        RetrySafeNatsConsumer.pull(nats, processor.build()).stream(args[2]).durable(args[3]).batchSize(1)
                .start();
        NEVER.await();
    }

    private static void blockAfterSaying(String line, Message msg) {
        System.out.println(line + " " + msg.metaData().streamSequence());
        System.out.flush();
        try {
            NEVER.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(4); // never reached unless interrupted: never acknowledge
    }

    /** The inbox of a child consumer: the records table {@code table} in the test's PostgreSQL database. */
    static JdbcIdempotencyStore store(String url, String user, String password, String table) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(url);
        dataSource.setUser(user);
        dataSource.setPassword(password);
        return JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL).table(table).build();
    }
}
