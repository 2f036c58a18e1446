package io.retrysafe.nats;

import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.inbox.tck.ConsumerSpec;
import io.retrysafe.inbox.tck.ContractHandler;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.inbox.tck.InboxHarness;
import io.retrysafe.inbox.tck.ReceivedMessage;
import io.retrysafe.inbox.tck.TestMessage;
import io.retrysafe.inbox.tck.UnorderedInboxContract;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestNats;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The inbox contract on NATS JetStream: {@link RetrySafeNatsConsumer} and
 * {@link NatsInbox} on the real server, PostgreSQL as the inbox. A nakked message
 * comes back after its delay while the ones behind it go on, so the contract is the unordered one.
 *
 * <p>Each channel is a memory stream of its own (deleted afterwards) with a subject for the messages,
 * one for the dead letters and a durable pull consumer. JetStream drops a publish whose
 * {@code Nats-Msg-Id} it saw within the stream's duplicate window; the contract tests the inbox's
 * deduplication, so the window is the server's shortest (100 ms) and a copy the server called a
 * duplicate is published again until it is stored.
 */
class NatsInboxContractIT extends UnorderedInboxContract {
    static final String STORE_TABLE = "rs_nats_contract_inbox";
    /** Short, so that the message the killed child committed comes back soon. */
    static final Duration ACK_WAIT = Duration.ofSeconds(2);
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Duration DUPLICATE_WINDOW = Duration.ofMillis(100);

    private static Connection nats;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void services() throws Exception {
        nats = TestNats.connect("retrysafe-nats-contract-it");
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(Duration.ofSeconds(1)).build();
        store.createSchema();
    }

    @AfterAll
    static void closeNats() throws InterruptedException {
        if (nats != null) {
            nats.close();
        }
    }

    @Override
    protected InboxHarness harness() {
        return new InboxHarness() {
            @Override
            public DataSource dataSource() {
                return ds;
            }

            @Override
            public Channel channel(String name) throws Exception {
                return new NatsChannel();
            }
        };
    }

    /** The processor a contract consumer runs, here and in {@link NatsContractChild}. */
    static NatsInbox processor(Connection nats, Inbox.Builder inbox, String deadLetters,
            ContractHandler handler) throws IOException {
        return NatsInbox.builder(inbox.retryStyle(RetryStyle.BROKER_REDELIVERY).build(),
                        (msg, connection, attempt) -> handler.handle(msg.getData(), connection, attempt))
                .deadLetters(nats.jetStream(), deadLetters).build();
    }

    /** One stream with its messages' and its dead letters' subjects, and one durable pull consumer. */
    private static final class NatsChannel implements InboxHarness.Channel {
        private final JetStreamManagement jsm;
        private final String stream = TestNats.uniqueName("RS_NATS_CONTRACT");
        private final String subject = stream + ".messages";
        private final String deadLetters = stream + ".dead-letters";
        private final String durable = "C_" + stream;
        private final List<AutoCloseable> running = new ArrayList<>();

        NatsChannel() throws Exception {
            jsm = nats.jetStreamManagement();
            jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subject, deadLetters)
                    .storageType(StorageType.Memory).duplicateWindow(DUPLICATE_WINDOW).build());
            jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(durable).filterSubject(subject)
                    .ackPolicy(AckPolicy.Explicit).ackWait(ACK_WAIT).maxDeliver(-1).build());
        }

        @Override
        public String scope() {
            return NatsInbox.scope(stream, durable);
        }

        @Override
        public void publish(TestMessage message) {
            Headers headers = new Headers();
            message.headers().forEach(headers::put);
            if (message.id() != null) {
                headers.put(MessageIds.NATS_MSG_ID, message.id());
            }
            NatsMessage msg = NatsMessage.builder().subject(subject).headers(headers).data(message.payload()).build();
            await().atMost(BOUND).pollInterval(Duration.ofMillis(20))
                    .until(() -> !nats.jetStream().publish(msg).isDuplicate());
        }

        @Override
        public InboxHarness.RunningConsumer consume(ConsumerSpec spec) throws Exception {
            Inbox.Builder inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("nats-contract")
                    .build())).maxAttempts(spec.maxAttempts()).backoff(spec.backoff())
                    .payloadBytes(spec.payloadBytes()).listener(spec.listener());
            RetrySafeNatsConsumer consumer = RetrySafeNatsConsumer.pull(nats,
                    processor(nats, inbox, deadLetters, spec.handler())).stream(stream).durable(durable)
                    .fetchTimeout(Duration.ofMillis(200)).closeTimeout(BOUND).start();
            running.add(consumer);
            return consumer::close;
        }

        @Override
        public List<ReceivedMessage> deadLetters() throws Exception {
            List<ReceivedMessage> read = new ArrayList<>();
            for (long seq = 1; ; ) {
                MessageInfo info;
                try {
                    info = jsm.getNextMessage(stream, seq, deadLetters);
                } catch (JetStreamApiException e) {
                    if (e.getErrorCode() == 404) {
                        return read;
                    }
                    throw e;
                }
                Map<String, String> headers = new LinkedHashMap<>();
                if (info.getHeaders() != null) {
                    info.getHeaders().forEach((name, values) -> headers.put(name, values.get(0)));
                }
                read.add(new ReceivedMessage(info.getData() == null ? new byte[0] : info.getData(), headers));
                seq = info.getSeq() + 1;
            }
        }

        @Override
        public InboxHarness.DyingConsumer consumeInChildJvm() throws Exception {
            ChildJvm child = ChildJvm.start(NatsContractChild.class, Effects.COMMITTED, TestNats.url(), stream,
                    durable, deadLetters, scope(), TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                    TestDatabases.postgresPassword());
            running.add(child);
            return InboxHarness.DyingConsumer.of(child::awaitLine, child::kill, child);
        }

        @Override
        public void close() throws Exception {
            try {
                for (int i = running.size() - 1; i >= 0; i--) {
                    running.get(i).close();
                }
            } finally {
                jsm.deleteStream(stream);
            }
        }
    }
}
