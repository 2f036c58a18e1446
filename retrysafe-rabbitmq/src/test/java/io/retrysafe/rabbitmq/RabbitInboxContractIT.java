package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.tck.ConsumerSpec;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.inbox.tck.InboxHarness;
import io.retrysafe.inbox.tck.OrderedInboxContract;
import io.retrysafe.inbox.tck.ReceivedMessage;
import io.retrysafe.inbox.tck.TestMessage;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRabbit;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The inbox contract on RabbitMQ: {@link RetrySafeRabbitConsumer} with {@link RabbitInbox} on a
 * quorum queue of the shared broker (one consumer: the queue's order), PostgreSQL as the inbox.
 *
 * <p>Ids travel in the header {@value #ID_HEADER}: the contract's too-long id (256 characters) cannot
 * be published in the AMQP {@code message-id} property at all, a short string of at most 255 bytes.
 * The property, the default, is covered by {@link RabbitInboxIT}.
 */
class RabbitInboxContractIT extends OrderedInboxContract {
    static final String ID_HEADER = "idempotency-key";
    static final String STORE_TABLE = "rs_rabbit_contract_inbox";
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static Connection connection;

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(Duration.ofSeconds(1)).build();
        store.createSchema();
        connection = TestRabbit.connect("retrysafe-rabbit-contract-it");
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (connection != null) {
            connection.close();
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
                return new RabbitChannel(name);
            }
        };
    }

    /** A quorum queue, its dead-letter queue {@code <queue>.dlq}, and one consumer name. */
    private static final class RabbitChannel implements InboxHarness.Channel {
        private final String queue;
        private final String consumerName;
        private final Channel channel;
        private final List<AutoCloseable> running = new ArrayList<>();

        RabbitChannel(String name) throws Exception {
            this.queue = TestRabbit.uniqueName(name.length() > 18 ? name.substring(0, 18) : name);
            this.consumerName = "billing";
            this.channel = connection.createChannel();
            channel.confirmSelect();
            channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.queueDeclare(queue + RabbitInbox.DEFAULT_DEAD_LETTER_SUFFIX, true, false, false, Map.of());
        }

        @Override
        public String scope() {
            return RabbitInbox.scope(consumerName, queue);
        }

        @Override
        public void publish(TestMessage message) throws Exception {
            Map<String, Object> headers = new HashMap<>(message.headers());
            if (message.id() != null) {
                headers.put(ID_HEADER, message.id());
            }
            AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().headers(headers).deliveryMode(2)
                    .build();
            channel.basicPublish("", queue, true, properties, message.payload());
            channel.waitForConfirmsOrDie(CLOSE_TIMEOUT.toMillis());
        }

        @Override
        public InboxHarness.RunningConsumer consume(ConsumerSpec spec) throws Exception {
            Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("rabbit-contract")
                            .build()))
                    .maxAttempts(spec.maxAttempts())
                    .backoff(spec.backoff())
                    .payloadBytes(spec.payloadBytes())
                    .listener(spec.listener())
                    .build();
            RabbitInbox rabbit = RabbitInbox.builder(inbox,
                            (delivery, c, attempt) -> spec.handler().handle(delivery.getBody(), c, attempt))
                    .consumerName(consumerName)
                    .messageIds(MessageIds.header(ID_HEADER))
                    .deadLetters(ConfirmedPublisher.of(connection))
                    .build();
            RetrySafeRabbitConsumer consumer = RetrySafeRabbitConsumer.builder(connection, rabbit).queue(queue)
                    .closeTimeout(CLOSE_TIMEOUT).start();
            running.add(consumer);
            return consumer::close;
        }

        @Override
        public List<ReceivedMessage> deadLetters() throws Exception {
            // Read and put back: each call sees every dead letter so far, oldest first.
            List<ReceivedMessage> read = new ArrayList<>();
            List<Long> tags = new ArrayList<>();
            GetResponse got;
            while ((got = channel.basicGet(queue + RabbitInbox.DEFAULT_DEAD_LETTER_SUFFIX, false)) != null) {
                tags.add(got.getEnvelope().getDeliveryTag());
                Map<String, String> headers = new LinkedHashMap<>();
                if (got.getProps().getHeaders() != null) {
                    got.getProps().getHeaders().forEach((k, v) -> headers.put(k, String.valueOf(v)));
                }
                read.add(new ReceivedMessage(got.getBody(), headers));
            }
            if (!tags.isEmpty()) {
                channel.basicNack(tags.get(tags.size() - 1), true, true);
            }
            return read;
        }

        @Override
        public InboxHarness.DyingConsumer consumeInChildJvm() throws Exception {
            ChildJvm child = ChildJvm.start(RabbitContractChild.class, Effects.COMMITTED, TestRabbit.url(), queue,
                    consumerName, scope(), TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                    TestDatabases.postgresPassword(), STORE_TABLE);
            running.add(child);
            return new InboxHarness.DyingConsumer() {
                @Override
                public void awaitCommitted(Duration bound) throws Exception {
                    child.awaitLine(bound);
                }

                @Override
                public void kill() throws Exception {
                    child.kill();
                }

                @Override
                public void close() throws Exception {
                    child.close();
                }
            };
        }

        @Override
        public void close() throws Exception {
            try {
                for (AutoCloseable c : running) {
                    c.close();
                }
            } finally {
                channel.queueDelete(queue);
                channel.queueDelete(queue + RabbitInbox.DEFAULT_DEAD_LETTER_SUFFIX);
                channel.close();
            }
        }
    }
}
