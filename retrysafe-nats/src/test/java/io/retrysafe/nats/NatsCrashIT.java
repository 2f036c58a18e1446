package io.retrysafe.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestNats;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A consumer process killed with SIGKILL in the middle of a message ({@link NatsCrashChild}, a
 * separate JVM on the same NATS server and PostgreSQL database), and what the redelivery does.
 */
class NatsCrashIT {
    /** Short, so that the dead consumer's message comes back soon. */
    private static final Duration ACK_WAIT = Duration.ofSeconds(2);
    /** Covers the rollback of the dead transaction, which PostgreSQL starts when it sees the socket close. */
    private static final Duration LOCK_TIMEOUT = Duration.ofSeconds(10);
    /** JVM start, connections and the first fetch of the child, on a slow machine. */
    private static final Duration CHILD_READY_BOUND = Duration.ofSeconds(60);
    private static final Duration REDELIVERY_BOUND = ACK_WAIT.plus(LOCK_TIMEOUT).plusSeconds(30);

    private static Connection nats;
    private static JetStreamManagement jsm;
    private static String stream;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static RetrySafe engine;

    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Recorder recorder = new Recorder();
    private String subject;
    private String durable;
    private ChildJvm child;
    private RetrySafeNatsConsumer survivor;

    @BeforeAll
    static void setUp() throws Exception {
        nats = TestNats.connect("retrysafe-nats-crash-it");
        jsm = nats.jetStreamManagement();
        stream = TestNats.uniqueName("RS_NATS_CRASH");
        jsm.addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
                .storageType(StorageType.Memory).build());
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(Effects.STORE_TABLE).lockTimeout(LOCK_TIMEOUT).build();
        store.createSchema();
        Effects.createTable(ds);
        engine = RetrySafe.builder(store).name("nats-crash-it").build();
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (nats != null) {
            try {
                if (stream != null) {
                    jsm.deleteStream(stream);
                }
            } finally {
                nats.close();
            }
        }
    }

    @BeforeEach
    void newConsumer() throws Exception {
        String token = TestNats.uniqueName("T");
        subject = stream + "." + token;
        durable = "C_" + token;
        jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(durable).filterSubject(subject)
                .ackPolicy(AckPolicy.Explicit).ackWait(ACK_WAIT).maxDeliver(-1).build());
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

    @Test
    void killedAfterItsCommitAndBeforeItsAckTheMessageIsRedeliveredAndReplayed() throws Exception {
        String key = IdempotencyKeys.uuidV7();
        long seq = IdempotentPublisher.of(nats.jetStream()).publish(subject, key, "pay 100".getBytes(UTF_8))
                .getSeqno();

        child = ChildJvm.start(NatsCrashChild.class, NatsCrashChild.COMMITTED, "after-commit", TestNats.url(), stream,
                durable, TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(), TestDatabases.postgresPassword());
        assertThat(child.awaitLine(CHILD_READY_BOUND)).isEqualTo(Long.toString(seq));
        child.kill();

        // The child's transaction committed the effect with the message id; the ack was never sent.
        assertThat(Effects.ids(ds, scope())).containsExactly(key);
        assertThat(store.inspect(IdempotencyKey.of(scope(), key))).get()
                .extracting(r -> r.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(consumerInfo().getAckFloor().getStreamSequence()).as("acknowledged up to").isLessThan(seq);

        survivor = startSurvivor();
        await().atMost(REDELIVERY_BOUND).pollInterval(Duration.ofMillis(50))
                .until(() -> !recorder.all().isEmpty() && settled());

        assertThat(recorder.all()).singleElement().satisfies(seen -> {
            assertThat(seen.result()).isInstanceOf(InboxResult.Replayed.class);
            assertThat(seen.streamSequence()).isEqualTo(seq);
            assertThat(seen.delivered()).as("delivered again after ack_wait").isEqualTo(2);
        });
        assertThat(handled).as("the survivor did not run the handler").isEmpty();
        assertThat(Effects.ids(ds, scope())).as("the effect happened once").containsExactly(key);
    }

    @Test
    void killedInsideTheHandlerTheMessageIsRedeliveredAndProcessedOnce() throws Exception {
        String key = IdempotencyKeys.uuidV7();
        long seq = IdempotentPublisher.of(nats.jetStream()).publish(subject, key, "pay 100".getBytes(UTF_8))
                .getSeqno();

        child = ChildJvm.start(NatsCrashChild.class, NatsCrashChild.INSIDE, "inside-handler", TestNats.url(), stream,
                durable, TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(), TestDatabases.postgresPassword());
        assertThat(child.awaitLine(CHILD_READY_BOUND)).isEqualTo(Long.toString(seq));
        child.kill();

        survivor = startSurvivor();
        await().atMost(REDELIVERY_BOUND).pollInterval(Duration.ofMillis(50))
                .until(() -> recorder.count(InboxResult.Processed.class) == 1 && settled());

        // The dead transaction may still hold the key's row lock for a moment: a delivery then waits, or is nakked.
        assertThat(recorder.all()).last().satisfies(seen -> assertThat(seen.result())
                .as("attempt n is delivery n: the killed one was the first")
                .isEqualTo(new InboxResult.Processed((int) seen.delivered())));
        assertThat(recorder.all().get(recorder.all().size() - 1).delivered()).isGreaterThanOrEqualTo(2);
        assertThat(recorder.results()).filteredOn(r -> !r.startsWith("processed "))
                .allSatisfy(r -> assertThat(r).isEqualTo("retry-later in-progress "
                        + OperationPolicy.DEFAULT_RETRY_AFTER));
        assertThat(handled).containsExactly(key);
        assertThat(Effects.ids(ds, scope())).as("the killed transaction's write was rolled back").containsExactly(key);
        assertThat(store.inspect(IdempotencyKey.of(scope(), key))).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.attempt()).isEqualTo(1);
        });
    }

    private RetrySafeNatsConsumer startSurvivor() throws Exception {
        NatsInbox processor = NatsInbox.builder(
                NatsProcessingIT.inbox(engine, recorder, b -> b), (msg, c, attempt) -> {
                    handled.add(attempt.key().value());
                    Effects.record(c, msg, attempt);
                }).deadLetters(nats.jetStream(), stream + ".dlq." + durable).build();
        return RetrySafeNatsConsumer.pull(nats, processor).stream(stream).durable(durable).batchSize(1)
                .fetchTimeout(Duration.ofSeconds(1)).closeTimeout(Duration.ofSeconds(10)).start();
    }

    private String scope() {
        return NatsInbox.scope(stream, durable);
    }

    private ConsumerInfo consumerInfo() throws Exception {
        return jsm.getConsumerInfo(stream, durable);
    }

    private boolean settled() throws Exception {
        ConsumerInfo info = consumerInfo();
        return info.getNumPending() == 0 && info.getNumAckPending() == 0;
    }
}
