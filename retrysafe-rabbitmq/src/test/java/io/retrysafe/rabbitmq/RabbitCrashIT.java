package io.retrysafe.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRabbit;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A consumer process killed with SIGKILL after its transaction committed and before it acknowledged
 * ({@link RabbitCrashChild}, a separate JVM on the same broker and PostgreSQL database): the broker
 * returns the unacknowledged message when the dead connection's socket closes, and the next
 * consumer replays it.
 */
class RabbitCrashIT {
    /** JVM start, connections and the first delivery of the child, on a slow machine. */
    private static final Duration CHILD_BOUND = Duration.ofSeconds(60);
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final String CONSUMER_NAME = "billing";

    private static Queues queues;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;

    private final List<InboxResult> results = new CopyOnWriteArrayList<>();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private ChildJvm child;
    private RetrySafeRabbitConsumer survivor;

    @BeforeAll
    static void setUp() throws Exception {
        queues = Queues.open("retrysafe-rabbit-crash-it");
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(Effects.STORE_TABLE).build();
        store.createSchema();
        Effects.createTable(ds);
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (queues != null) {
            queues.close();
        }
    }

    @AfterEach
    void noChildOutlivesItsTest() throws Exception {
        try {
            if (survivor != null) {
                survivor.close();
            }
        } finally {
            if (child != null) {
                child.close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Queues.Type.class)
    void killedAfterItsCommitAndBeforeItsAckTheMessageIsRedeliveredAndReplayed(Queues.Type type) throws Exception {
        String queue = queues.declare("rs-crash", type);
        String scope = RabbitInbox.scope(CONSUMER_NAME, queue);
        queues.publish(queue, "pay-1", "pay 100");

        child = ChildJvm.start(RabbitCrashChild.class, RabbitCrashChild.COMMITTED, TestRabbit.url(), queue,
                CONSUMER_NAME, TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword());
        assertThat(child.awaitLine(CHILD_BOUND)).as("the id the child committed").isEqualTo("pay-1");
        child.kill();

        // The child's transaction committed the effect with the message id; the ack was never sent.
        assertThat(Effects.rows(ds, scope)).containsExactly("pay-1 pay 100 " + RabbitCrashChild.CHILD);
        assertThat(store.inspect(IdempotencyKey.of(scope, "pay-1"))).get()
                .extracting(r -> r.status()).isEqualTo(RecordStatus.COMPLETED);
        await("the broker took the unacknowledged message back").atMost(BOUND)
                .until(() -> queues.ready(queue) == 1);

        survivor = startSurvivor(queue);
        await().atMost(BOUND).until(() -> !results.isEmpty());
        survivor.close();

        assertThat(results).singleElement().isInstanceOf(InboxResult.Replayed.class);
        assertThat(handled).as("the survivor did not run the handler").isEmpty();
        assertThat(Effects.rows(ds, scope)).as("the effect happened once")
                .containsExactly("pay-1 pay 100 " + RabbitCrashChild.CHILD);
        assertThat(queues.ready(queue)).as("the replay was acknowledged").isZero();
    }

    private RetrySafeRabbitConsumer startSurvivor(String queue) throws Exception {
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("rabbit-crash-it").build()))
                .listener(new InboxListener() {
                    @Override
                    public void onResult(Delivery delivery, InboxResult result) {
                        results.add(result);
                    }
                }).build();
        RabbitInbox rabbit = RabbitInbox.builder(inbox, (delivery, c, attempt) -> {
            handled.add(attempt.key().value());
            Effects.record(c, delivery, attempt, "survivor");
        }).consumerName(CONSUMER_NAME).deadLetters(ConfirmedPublisher.of(queues.connection())).build();
        return RetrySafeRabbitConsumer.builder(queues.connection(), rabbit).queue(queue)
                .closeTimeout(Duration.ofSeconds(10)).start();
    }
}
