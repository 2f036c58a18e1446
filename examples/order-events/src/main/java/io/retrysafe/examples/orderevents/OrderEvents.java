package io.retrysafe.examples.orderevents;

import com.zaxxer.hikari.HikariDataSource;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.DeadLetterPublisher;
import io.retrysafe.kafka.RetrySafeKafkaConsumer;
import io.retrysafe.kafka.KafkaInbox;
import io.retrysafe.nats.NatsInbox;
import io.retrysafe.nats.MessageIds;
import io.retrysafe.nats.RetrySafeNatsConsumer;
import io.retrysafe.rabbitmq.ConfirmedPublisher;
import io.retrysafe.rabbitmq.RabbitInbox;
import io.retrysafe.rabbitmq.RetrySafeRabbitConsumer;
import io.retrysafe.testservices.KafkaBroker;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Order events booked into PostgreSQL exactly once, from Kafka, from NATS JetStream or from RabbitMQ.
 *
 * <p>A producer publishes {@code --orders} order events, each {@code --copies} times with the same
 * message id (header {@code idempotency-key}; on RabbitMQ the AMQP {@code message-id} property), as a producer does that sends again after a lost
 * acknowledgement or a restart. A consumer books each event it receives: one row in
 * {@code order_booking}, a table with no unique index, so a double booking would show. RetrySafe
 * records the message id in the booking's own transaction, and skips every copy whose id is
 * already there. The run prints what it published, what the consumer did, and what the table holds.
 *
 * <pre>
 * OrderEvents kafka|nats|rabbitmq [--orders N] [--copies N] [--run NAME]
 * </pre>
 *
 * Where things are (environment variables, or {@code --name=value} options of the same meaning):
 * {@code KAFKA_BOOTSTRAP_SERVERS} (none: an in-process KRaft broker is started), {@code NATS_URL}
 * (default {@code nats://127.0.0.1:4222}), {@code RABBITMQ_URL} (default
 * {@code amqp://guest:guest@127.0.0.1:5672/%2F}), {@code RETRYSAFE_JDBC_URL} with {@code RETRYSAFE_JDBC_USER}
 * and {@code RETRYSAFE_JDBC_PASSWORD} (none: an embedded PostgreSQL is started).
 */
public final class OrderEvents {
    static final String INBOX_TABLE = "order_events_inbox";
    static final String BOOKINGS = "order_booking";
    private static final Duration BOUND = Duration.ofSeconds(120);
    private static final Pattern RUN_NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,39}");
    private static final Pattern PAYLOAD = Pattern.compile("\\{\"orderId\":\"([^\"]+)\",\"amountCents\":(\\d+)}");

    private final Map<String, String> settings;
    private final PrintStream out;
    private final String broker;
    private final String run;
    private final int orders;
    private final int copies;

    /** What a run did: {@code booked} events ran the booking, {@code skipped} were duplicates; the table's rows for the run's orders. */
    public record Summary(int published, int booked, int skipped, long rows, long distinctOrders, long totalCents) {
    }

    private OrderEvents(String broker, Map<String, String> settings, PrintStream out) {
        this.broker = broker;
        this.settings = settings;
        this.out = out;
        this.run = setting("run", "RUN", "demo");
        if (!RUN_NAME.matcher(run).matches()) {
            throw new IllegalArgumentException("--run must be 1 to 40 of a-z, 0-9 and '-', starting with a letter or "
                    + "digit, but was " + run);
        }
        this.orders = positive("orders", 20);
        this.copies = positive("copies", 2);
    }

    public static void main(String[] args) throws Exception {
        try {
            run(args, System.out);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.println("usage: OrderEvents kafka|nats|rabbitmq [--orders=N] [--copies=N] [--run=NAME]");
            System.exit(2);
        }
        System.exit(0); // the Kafka and NATS clients leave non-daemon threads behind
    }

    /** Runs the example on {@code args[0]} (kafka, nats or rabbitmq), printing to {@code out}. */
    public static Summary run(String[] args, PrintStream out) throws Exception {
        if (args.length == 0 || !List.of("kafka", "nats", "rabbitmq").contains(args[0])) {
            throw new IllegalArgumentException("the first argument must be kafka, nats or rabbitmq, but was "
                    + (args.length == 0 ? "nothing" : args[0]));
        }
        Map<String, String> settings = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            Matcher m = Pattern.compile("--([a-z-]+)=(.*)").matcher(args[i]);
            if (!m.matches()) {
                throw new IllegalArgumentException("options are --name=value, but was " + args[i]);
            }
            settings.put(m.group(1), m.group(2));
        }
        OrderEvents example = new OrderEvents(args[0], settings, out);
        try (Database db = example.database()) {
            return switch (args[0]) {
                case "kafka" -> example.kafka(db.dataSource);
                case "nats" -> example.nats(db.dataSource);
                default -> example.rabbitmq(db.dataSource);
            };
        }
    }

    // ---------------------------------------------------------------- Kafka

    private Summary kafka(DataSource ds) throws Exception {
        String configured = setting("bootstrap-servers", "KAFKA_BOOTSTRAP_SERVERS", null);
        KafkaBroker broker = null;
        String bootstrap = configured;
        if (configured == null) {
            out.println("No KAFKA_BOOTSTRAP_SERVERS: starting an in-process Kafka broker (KRaft) ...");
            broker = new KafkaBroker().start();
            bootstrap = broker.bootstrapServers();
        }
        try {
            return kafka(ds, bootstrap, configured == null ? "in-process broker at " + bootstrap : bootstrap);
        } finally {
            if (broker != null) {
                broker.close();
            }
        }
    }

    private Summary kafka(DataSource ds, String bootstrap, String where) throws Exception {
        String topic = run + "-order-events";
        String group = run + "-booking";
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            for (String name : List.of(topic, topic + ".DLT")) {
                try {
                    admin.createTopics(List.of(new NewTopic(name, 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
        }
        out.println("Kafka: " + where + ", topic " + topic + ", consumer group " + group);

        Map<String, Object> producerConfig = new HashMap<>();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
        producerConfig.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        Counts counts = new Counts();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig, new StringSerializer(),
                new StringSerializer())) {
            // The consumer: the booking, the inbox in its transaction, offsets committed after it.
            Inbox kafkaInbox = Inbox.builder(inbox(ds))
                    .listener(counts.listener())
                    .build();
            KafkaInbox<String, String> processor = KafkaInbox
                    .<String, String>builder(kafkaInbox, (record, connection, attempt) ->
                            book(connection, record.value()))
                    .consumerGroup(group)
                    .deadLetters(DeadLetterPublisher.of(producer))
                    .build();
            Map<String, Object> consumerConfig = new HashMap<>();
            consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            RetrySafeKafkaConsumer<String, String> loop = RetrySafeKafkaConsumer.builder(
                    new KafkaConsumer<>(consumerConfig, new StringDeserializer(), new StringDeserializer()), processor)
                    .topics(topic).pollTimeout(Duration.ofMillis(200)).build();
            ExecutorService executor = Executors.newSingleThreadExecutor();
            Future<?> consuming = executor.submit(loop);
            try {
                // The producer: every order, then every order again (a producer that re-sends after a restart).
                for (int copy = 0; copy < copies; copy++) {
                    for (int i = 1; i <= orders; i++) {
                        ProducerRecord<String, String> record = new ProducerRecord<>(topic, orderId(i), payload(i));
                        record.headers().add("idempotency-key", messageId(i).getBytes(StandardCharsets.UTF_8));
                        producer.send(record).get(30, TimeUnit.SECONDS);
                    }
                }
                printPublished(topic);
                counts.await(orders * copies, consuming);
            } finally {
                loop.shutdown();
                executor.shutdown();
                executor.awaitTermination(30, TimeUnit.SECONDS);
            }
        }
        return summary(ds, counts);
    }

    // ---------------------------------------------------------------- NATS JetStream

    private Summary nats(DataSource ds) throws Exception {
        String url = setting("nats-url", "NATS_URL", "nats://127.0.0.1:4222");
        String stream = run.toUpperCase().replace('-', '_') + "_ORDER_EVENTS";
        String subject = run + ".orders.created";
        String deadLetters = run + ".orders.dlq";
        String durable = "booking";
        Counts counts = new Counts();
        try (Connection nats = Nats.connect(new Options.Builder().server(url).connectionName("order-events")
                .connectionTimeout(Duration.ofSeconds(10)).build())) {
            JetStreamManagement jsm = nats.jetStreamManagement();
            try {
                jsm.getStreamInfo(stream);
            } catch (JetStreamApiException notThere) {
                jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subject, deadLetters)
                        .storageType(StorageType.File).build());
            }
            jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(durable).filterSubject(subject)
                    .ackPolicy(AckPolicy.Explicit).ackWait(Duration.ofSeconds(30)).maxDeliver(-1).build());
            out.println("NATS JetStream: " + url + ", stream " + stream + ", subject " + subject + ", durable consumer "
                    + durable);

            // JetStream retries by redelivering (nakWithDelay): attempt n of the inbox is delivery n.
            Inbox natsInbox = Inbox.builder(inbox(ds)).retryStyle(RetryStyle.BROKER_REDELIVERY)
                    .listener(counts.listener())
                    .build();
            NatsInbox processor = NatsInbox
                    .builder(natsInbox, (msg, connection, attempt) ->
                            book(connection, new String(msg.getData(), StandardCharsets.UTF_8)))
                    // The same header as on Kafka. (IdempotentPublisher's Nats-Msg-Id would also have the
                    // server drop copies inside the stream's duplicate window: the inbox is what covers the rest.)
                    .messageIds(MessageIds.header("idempotency-key"))
                    // A message given up is published here (the same stream captures it), then terminated.
                    .deadLetters(nats.jetStream(), deadLetters)
                    .build();
            try (RetrySafeNatsConsumer consumer = RetrySafeNatsConsumer.pull(nats, processor)
                    .stream(stream).durable(durable).start()) {
                JetStream js = nats.jetStream();
                for (int copy = 0; copy < copies; copy++) {
                    for (int i = 1; i <= orders; i++) {
                        js.publish(NatsMessage.builder().subject(subject)
                                .headers(new Headers().put("idempotency-key", messageId(i)))
                                .data(payload(i).getBytes(StandardCharsets.UTF_8)).build());
                    }
                }
                printPublished(subject);
                counts.await(orders * copies, null);
            }
        }
        return summary(ds, counts);
    }

    // ---------------------------------------------------------------- RabbitMQ

    private Summary rabbitmq(DataSource ds) throws Exception {
        String url = setting("rabbitmq-url", "RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/%2F");
        String queue = run + ".order-events";
        String consumerName = run + "-booking";
        Counts counts = new Counts();
        com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
        factory.setUri(url);
        try (com.rabbitmq.client.Connection rabbit = factory.newConnection("order-events");
                Channel channel = rabbit.createChannel()) {
            // A quorum queue (replicated, counts deliveries) and its dead-letter queue, if missing.
            channel.queueDeclare(queue, true, false, false, Map.of("x-queue-type", "quorum"));
            channel.queueDeclare(queue + RabbitInbox.DEFAULT_DEAD_LETTER_SUFFIX, true, false, false, Map.of());
            out.println("RabbitMQ: " + url.replaceFirst("//[^@/]*@", "//") + ", queue " + queue + ", consumer "
                    + consumerName);

            // Retries of a failing booking happen in the process; dead letters go to <queue>.dlq, confirmed.
            Inbox rabbitInbox = Inbox.builder(inbox(ds))
                    .listener(counts.listener())
                    .build();
            RabbitInbox booking = RabbitInbox.builder(rabbitInbox, (delivery, connection, attempt) ->
                            book(connection, new String(delivery.getBody(), StandardCharsets.UTF_8)))
                    .consumerName(consumerName)
                    .deadLetters(ConfirmedPublisher.of(rabbit))
                    .build();
            try (RetrySafeRabbitConsumer consumer = RetrySafeRabbitConsumer.builder(rabbit, booking).queue(queue)
                    .start()) {
                // The producer: the AMQP message-id property carries the id; each publish waits for its confirm.
                channel.confirmSelect();
                for (int copy = 0; copy < copies; copy++) {
                    for (int i = 1; i <= orders; i++) {
                        channel.basicPublish("", queue, true, new AMQP.BasicProperties.Builder()
                                .messageId(messageId(i)).deliveryMode(2).build(),
                                payload(i).getBytes(StandardCharsets.UTF_8));
                        channel.waitForConfirmsOrDie(30_000);
                    }
                }
                printPublished(queue);
                counts.await(orders * copies, null);
            }
        }
        return summary(ds, counts);
    }

    // ---------------------------------------------------------------- the booking, in the inbox's transaction

    private static void book(java.sql.Connection connection, String payload) throws SQLException {
        Matcher m = PAYLOAD.matcher(payload);
        if (!m.matches()) {
            throw new IllegalArgumentException("not an order event: " + payload);
        }
        try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + BOOKINGS
                + " (order_id, amount_cents) VALUES (?, ?)")) {
            ps.setString(1, m.group(1));
            ps.setLong(2, Long.parseLong(m.group(2)));
            ps.executeUpdate();
        }
    }

    private TransactionalRetrySafe inbox(DataSource ds) {
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(INBOX_TABLE).build();
        return TransactionalRetrySafe.of(RetrySafe.builder(store).name("order-events").build());
    }

    /** Orders of a run, per broker: the Kafka and the NATS inbox are apart (their scopes differ), so are their orders. */
    private String orderId(int i) {
        return orderPrefix() + i;
    }

    private String orderPrefix() {
        return run + "-" + broker + "-order-";
    }

    /** The producer's id for the event: made once per intent, the same on every send of it. */
    private String messageId(int i) {
        return "order-created:" + orderId(i);
    }

    private String payload(int i) {
        return "{\"orderId\":\"" + orderId(i) + "\",\"amountCents\":" + (1000 + 25 * i) + "}";
    }

    private void printPublished(String where) {
        out.println("Published " + orders + " order events, each " + copies + " times with the same message id: "
                + orders * copies + " messages to " + where);
    }

    private Summary summary(DataSource ds, Counts counts) throws SQLException {
        try (java.sql.Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*), count(DISTINCT order_id), coalesce(sum(amount_cents), 0) FROM " + BOOKINGS
                        + " WHERE order_id LIKE ?")) {
            ps.setString(1, orderPrefix() + "%");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                Summary s = new Summary(orders * copies, counts.booked.get(), counts.skipped.get(), rs.getLong(1),
                        rs.getLong(2), rs.getLong(3));
                out.println("Consumer: " + s.booked() + " booked, " + s.skipped() + " duplicates skipped");
                out.printf("Table %s: %d rows for %d orders, total %d.%02d%n", BOOKINGS, s.rows(), s.distinctOrders(),
                        s.totalCents() / 100, s.totalCents() % 100);
                return s;
            }
        }
    }

    /** What the consumer did, as its listener heard it. */
    private static final class Counts {
        final AtomicInteger booked = new AtomicInteger();
        final AtomicInteger skipped = new AtomicInteger();
        private final Object lock = new Object();

        /** The inbox listener that counts each result. */
        InboxListener listener() {
            return new InboxListener() {
                @Override
                public void onResult(Delivery delivery, InboxResult result) {
                    count(result instanceof InboxResult.Processed, result instanceof InboxResult.Replayed);
                }
            };
        }

        void count(boolean processed, boolean replayed) {
            if (processed) {
                booked.incrementAndGet();
            } else if (replayed) {
                skipped.incrementAndGet();
            }
            synchronized (lock) {
                lock.notifyAll();
            }
        }

        /** Waits until {@code messages} were booked or skipped; fails past the bound or if the consumer stopped. */
        void await(int messages, Future<?> consumer) throws Exception {
            long deadline = System.nanoTime() + BOUND.toNanos();
            synchronized (lock) {
                while (booked.get() + skipped.get() < messages) {
                    if (consumer != null && consumer.isDone()) {
                        consumer.get(); // its failure, if it failed
                        throw new IllegalStateException("the consumer stopped");
                    }
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new IllegalStateException("the consumer handled " + (booked.get() + skipped.get())
                                + " of " + messages + " messages within " + BOUND);
                    }
                    lock.wait(Math.min(TimeUnit.NANOSECONDS.toMillis(left) + 1, 200));
                }
            }
        }
    }

    // ---------------------------------------------------------------- the database

    private Database database() throws IOException, SQLException {
        String url = setting("jdbc-url", "RETRYSAFE_JDBC_URL", null);
        HikariDataSource pool = new HikariDataSource();
        EmbeddedPostgres embedded = null;
        if (url != null) {
            pool.setJdbcUrl(url);
            pool.setUsername(setting("jdbc-user", "RETRYSAFE_JDBC_USER", "postgres"));
            pool.setPassword(setting("jdbc-password", "RETRYSAFE_JDBC_PASSWORD", ""));
            out.println("PostgreSQL: " + url);
        } else {
            embedded = EmbeddedPostgres.builder().setServerConfig("listen_addresses", "127.0.0.1")
                    .setPGStartupWait(Duration.ofSeconds(60)).start();
            pool.setJdbcUrl(embedded.getJdbcUrl("postgres", "postgres"));
            pool.setUsername("postgres");
            out.println("PostgreSQL: embedded, on port " + embedded.getPort() + " (no RETRYSAFE_JDBC_URL); its data "
                    + "lasts as long as this run");
        }
        pool.setMaximumPoolSize(4);
        Database db = new Database(pool, embedded);
        try (java.sql.Connection c = pool.getConnection(); Statement st = c.createStatement()) {
            // No unique index on order_id, on purpose: a double booking would be a second row.
            st.execute("CREATE TABLE IF NOT EXISTS " + BOOKINGS + " (id bigserial PRIMARY KEY, order_id text NOT NULL,"
                    + " amount_cents bigint NOT NULL, booked_at timestamptz NOT NULL DEFAULT now())");
        } catch (SQLException e) {
            db.close();
            throw e;
        }
        JdbcIdempotencyStore.builder(pool).table(INBOX_TABLE).build().createSchema();
        return db;
    }

    private record Database(HikariDataSource dataSource, EmbeddedPostgres embedded) implements AutoCloseable {
        @Override
        public void close() throws IOException {
            dataSource.close();
            if (embedded != null) {
                embedded.close();
            }
        }
    }

    private String setting(String option, String env, String fallback) {
        String value = settings.get(option);
        if (value == null) {
            value = System.getenv(env);
        }
        return value == null || value.isBlank() ? fallback : value;
    }

    private int positive(String option, int fallback) {
        String value = settings.get(option);
        if (value == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value);
            if (n >= 1 && n <= 100_000) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("--" + option + " must be a whole number from 1 to 100000, but was " + value);
    }
}
