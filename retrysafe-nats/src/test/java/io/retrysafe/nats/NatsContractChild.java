package io.retrysafe.nats;

import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * The inbox contract's dying consumer on JetStream: the real {@link RetrySafeNatsConsumer}
 * whose inbox listener ({@link Effects#holdAfterCommit()}) blocks once the first message committed,
 * before the processor acknowledges it. {@link NatsInboxContractIT} kills it with SIGKILL.
 *
 * <pre>
 * NatsContractChild NATS_URL STREAM DURABLE DEAD_LETTER_SUBJECT SCOPE PG_URL PG_USER PG_PASSWORD
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class NatsContractChild {

    private NatsContractChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 8) {
            throw new IllegalArgumentException("usage: NatsContractChild NATS_URL STREAM DURABLE DEAD_LETTER_SUBJECT"
                    + " SCOPE PG_URL PG_USER PG_PASSWORD, but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        JdbcIdempotencyStore store = NatsCrashChild.store(args[5], args[6], args[7], NatsInboxContractIT.STORE_TABLE);
        Connection nats = Nats.connect(new Options.Builder().server(args[0]).connectionName("retrysafe-contract-child")
                .connectionTimeout(Duration.ofSeconds(10)).build());
        Inbox.Builder inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store)
                .name("nats-contract-child").build())).listener(Effects.holdAfterCommit());
        RetrySafeNatsConsumer.pull(nats, NatsInboxContractIT.processor(nats, inbox, args[3],
                Effects.childHandler(args[4]))).stream(args[1]).durable(args[2]).batchSize(1).start();
        new CountDownLatch(1).await();
    }
}
