package io.retrysafe.benchmarks;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.KafkaInbox;
import io.retrysafe.kafka.MessageIds;
import io.retrysafe.rabbitmq.ConfirmedPublisher;
import io.retrysafe.rabbitmq.RabbitInbox;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.camel.processor.idempotent.jdbc.JdbcMessageIdRepository;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A message consumer on PostgreSQL that books one order per message (insert the order row, add it
 * to its customer's counter, one transaction), with no deduplication or behind one of four inboxes.
 * Shared by {@link InboxBenchmark} (throughput) and {@link InboxDuplicates} (what each lets through),
 * so both run the same code. Messages come from memory: no broker, so only the inbox's cost shows.
 *
 * <p>Tables: {@code rs_bench_inbox_order}, {@code rs_bench_inbox_counter} ({@value #CUSTOMERS} rows,
 * so that counter row locks rarely serialise threads), and each variant's own: RetrySafe's records
 * ({@code rs_bench_inbox_record}, the store's schema), Camel's {@code rs_bench_camel_processed}
 * (Camel's {@code CAMEL_MESSAGEPROCESSED} DDL, renamed), Spring Integration's
 * {@code rs_bench_si_metadata_store} (its {@code schema-postgresql.sql}, prefix changed). The order
 * table has no unique constraint on the message id on purpose: it would be a deduplication of its own.
 */
final class InboxWorkload implements AutoCloseable {
    static final int CUSTOMERS = 1_000;
    static final String TOPIC = "orders";
    static final String GROUP = "bench-orders";
    static final String RECORD_TABLE = "rs_bench_inbox_record";
    static final String CAMEL_TABLE = "rs_bench_camel_processed";
    /** Spring Integration's table prefix: its {@code INT_METADATA_STORE} becomes {@code RS_BENCH_SI_METADATA_STORE}. */
    static final String SI_PREFIX = "RS_BENCH_SI_";
    /** A header on a delivery whose business work must fail after its writes (a crash before commit). */
    static final String FAIL_HEADER = "bench-fail";

    private static final String INSERT_ORDER =
            "INSERT INTO rs_bench_inbox_order (message_id, customer, amount, created_at) VALUES (?, ?, ?, now())";
    private static final String UPDATE_COUNTER =
            "UPDATE rs_bench_inbox_counter SET orders = orders + 1, amount = amount + ? WHERE customer = ?";

    /** The variants; {@code @Param} values are their names in camel case, as {@link #label()} gives them. */
    enum Variant {
        /** The business transaction alone: a redelivered message is booked again. */
        BARE("bare"),
        /**
         * RetrySafe's Kafka inbox: {@link KafkaInbox#process} with an in-memory
         * {@link ConsumerRecord} whose {@code idempotency-key} header is the message id. Claim, business
         * writes and the stored outcome commit in one transaction; a concurrent duplicate waits on the
         * claim's primary key and then skips.
         */
        RETRYSAFE("retrysafe"),
        /**
         * RetrySafe's RabbitMQ adapter on the same inbox: {@link RabbitInbox#process} with an in-memory
         * AMQP delivery whose {@code message-id} property is the message id. No broker: what it adds to
         * {@code retrysafe} is the adapter's own work per message (the delivery's mapping, its scope).
         */
        RABBITMQ("rabbitmq"),
        /**
         * Camel's {@link JdbcMessageIdRepository} as its Idempotent Consumer EIP uses it by default
         * (eager, {@code removeOnFailure}): {@code add(id)} in a transaction of its own, committed
         * before the work; the business transaction next; {@code remove(id)} if it failed. It can share
         * the business transaction only in a {@code transacted()} route on the same DataSource (its
         * TransactionTemplate then joins). {@code add} is {@code SELECT COUNT(*)} then {@code INSERT} on
         * Camel's own table, which (in 4.22) has a primary key {@code (processorName, messageId)}: two
         * concurrent adds of one id can both count 0; the second insert then waits for the first add's
         * commit, fails on the key, and {@code add} answers false (4.22 catches the duplicate-key
         * exception). No double effects, then; but a boolean cannot tell
         * "in progress" from "done", so a copy arriving while the first is still being processed is
         * skipped as done; and a crash between {@code add} and the commit of the work loses the message
         * (marked, never done). No expiry: rows stay until removed.
         */
        CAMEL("camel"),
        /**
         * Spring Integration's {@link JdbcMetadataStore#putIfAbsent} (what its
         * {@code MetadataStoreSelector} / idempotent receiver calls), on its documented table, inside a
         * Spring transaction that also holds the business writes (a transactional listener or poller):
         * {@code INSERT … SELECT … HAVING COUNT(*)=0 ON CONFLICT DO NOTHING} on a primary key, so a
         * concurrent duplicate waits for the first to commit or roll back. It stores no outcome, status
         * or expiry (rows stay until removed).
         */
        SPRING_INTEGRATION("springIntegration");

        private final String label;

        Variant(String label) {
            this.label = label;
        }

        String label() {
            return label;
        }

        static Variant parse(String name) {
            for (Variant v : values()) {
                if (v.label.equalsIgnoreCase(name) || v.name().equalsIgnoreCase(name)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("variant must be one of bare, retrysafe, camel, springIntegration,"
                    + " but was " + name);
        }
    }

    /** What one delivery came to, as the consumer sees it. */
    enum Verdict {
        /** The business work ran and committed. */
        PROCESSED,
        /** Skipped as a duplicate. */
        SKIPPED,
        /** The business work failed (injected) and nothing of it was kept. */
        FAILED,
        /** The inbox could not decide (a lock timeout, a duplicate-key exception): to be redelivered. */
        RETRY
    }

    /** One message: its id, and a payload that is a function of the id, so a duplicate is byte-identical. */
    record Message(String id, int customer, long amount) {
        String json() {
            return "{\"customer\":" + customer + ",\"amount\":" + amount + "}";
        }
    }

    /**
     * Message {@code n} of a run: ids are UUIDs (36 characters, as a producer's would be) made of a
     * per-run prefix and {@code n}, so runs never collide and a duplicate is just the same {@code n}.
     */
    static final class Messages {
        private final long runBits = UUID.randomUUID().getMostSignificantBits();
        private final AtomicLong next = new AtomicLong();

        Message message(long n) {
            int customer = (int) Math.floorMod(n * 0x9E3779B97F4A7C15L, (long) CUSTOMERS) + 1;
            return new Message(new UUID(runBits, n).toString(), customer, 1 + Math.floorMod(n, 100));
        }

        /**
         * The next message, or with probability {@code duplicates} a redelivery of one of the last
         * {@code window} messages (it may still be in flight on another thread, as after a rebalance).
         */
        Message next(double duplicates, int window) {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            long issued = next.get();
            if (issued > 0 && r.nextDouble() < duplicates) {
                return message(issued - 1 - r.nextLong(Math.min(window, issued)));
            }
            return message(next.getAndIncrement());
        }
    }

    private final HikariDataSource dataSource;
    private final KafkaInbox<String, String> processor;
    private final RabbitInbox rabbit;
    private final JdbcMessageIdRepository camel;
    private final JdbcMetadataStore metadataStore;
    private final TransactionTemplate springTransaction;
    private final AtomicLong offsets = new AtomicLong();

    private InboxWorkload(HikariDataSource dataSource) throws Exception {
        this.dataSource = dataSource;
        createBusinessSchema();

        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).table(RECORD_TABLE).build();
        store.createSchema();
        // InboxDuplicates injects one failure per message: no in-process retry hides it.
        Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("bench-inbox").build()))
                .maxAttempts(1).build();
        this.processor = KafkaInbox.<String, String>builder(inbox, this::handle)
                .consumerGroup(GROUP)
                .messageIds(MessageIds.defaultHeader())
                .deadLetters(deadLetter -> { }) // only InboxDuplicates' injected failures end here
                .build();

        this.rabbit = RabbitInbox.builder(inbox,
                        (delivery, connection, attempt) -> book(connection,
                                parse(attempt.key().value(), new String(delivery.getBody(), StandardCharsets.UTF_8)),
                                delivery.getProperties().getHeaders() != null
                                        && delivery.getProperties().getHeaders().containsKey(FAIL_HEADER)))
                .consumerName(GROUP)
                // No broker here: an injected failure's dead letter is not confirmed, and the result is "retry later".
                .deadLetters(ConfirmedPublisher.of(() -> {
                    throw new IllegalStateException("the benchmark has no broker for dead letters");
                }, Duration.ofSeconds(1)))
                .build();

        // Camel creates its own table (createTableIfNotExists, on start), only the name changed.
        this.camel = new JdbcMessageIdRepository(dataSource, GROUP);
        camel.setTableName(CAMEL_TABLE);
        camel.start();

        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + springIntegrationDdl());
        }
        this.metadataStore = new JdbcMetadataStore(dataSource);
        metadataStore.setTablePrefix(SI_PREFIX);
        metadataStore.setRegion(GROUP);
        metadataStore.afterPropertiesSet();
        metadataStore.start();
        this.springTransaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    /** Opens a pool of {@code poolSize} connections (all opened up front) and creates the tables if absent. */
    static InboxWorkload open(String url, String user, String password, int poolSize) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setPoolName("retrysafe-bench-inbox");
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(poolSize);
        config.setConnectionTimeout(Duration.ofSeconds(30).toMillis());
        HikariDataSource dataSource = new HikariDataSource(config);
        try {
            return new InboxWorkload(dataSource);
        } catch (Exception | Error e) {
            dataSource.close();
            throw e;
        }
    }

    /**
     * Spring Integration's documented {@code INT_METADATA_STORE} statement, read from its
     * {@code schema-postgresql.sql} in the jar, with this benchmark's prefix; without the leading
     * {@code CREATE TABLE}.
     */
    static String springIntegrationDdl() throws IOException {
        String script;
        try (InputStream in = JdbcMetadataStore.class.getResourceAsStream("/org/springframework/integration/jdbc/"
                + "schema-postgresql.sql")) {
            if (in == null) {
                throw new IllegalStateException("schema-postgresql.sql is not in spring-integration-jdbc");
            }
            script = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        int start = script.indexOf("CREATE TABLE INT_METADATA_STORE");
        int end = script.indexOf(");", start);
        if (start < 0 || end < 0) {
            throw new IllegalStateException("no CREATE TABLE INT_METADATA_STORE in Spring Integration's schema");
        }
        return script.substring(start + "CREATE TABLE ".length(), end + 1).replace("INT_", SI_PREFIX);
    }

    private void createBusinessSchema() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_inbox_counter (customer integer PRIMARY KEY,"
                    + " orders bigint NOT NULL, amount bigint NOT NULL)");
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_inbox_order (id bigint GENERATED ALWAYS AS IDENTITY"
                    + " PRIMARY KEY, message_id varchar(100) NOT NULL, customer integer NOT NULL"
                    + " REFERENCES rs_bench_inbox_counter (customer), amount bigint NOT NULL,"
                    + " created_at timestamptz NOT NULL)");
        }
    }

    /** {@code ANALYZE} of every table, per iteration, for the reason {@code PaymentWorkload.analyze()} gives. */
    void analyze() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("ANALYZE rs_bench_inbox_order, rs_bench_inbox_counter, " + RECORD_TABLE + ", " + CAMEL_TABLE
                    + ", " + SI_PREFIX + "METADATA_STORE");
        }
    }

    /** Empties every table, re-creates the counters, and checkpoints, so that each trial starts alike. */
    void reset() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("TRUNCATE rs_bench_inbox_order, rs_bench_inbox_counter, " + RECORD_TABLE + ", " + CAMEL_TABLE
                    + ", " + SI_PREFIX + "METADATA_STORE RESTART IDENTITY");
            st.execute("INSERT INTO rs_bench_inbox_counter (customer, orders, amount) SELECT g, 0, 0"
                    + " FROM generate_series(1, " + CUSTOMERS + ") g");
            st.execute("VACUUM ANALYZE rs_bench_inbox_order, rs_bench_inbox_counter, " + RECORD_TABLE + ", "
                    + CAMEL_TABLE + ", " + SI_PREFIX + "METADATA_STORE");
            try {
                st.execute("CHECKPOINT"); // superuser only; it just makes trials more alike
            } catch (SQLException e) {
                System.err.println("[retrysafe-bench] CHECKPOINT skipped: " + e.getMessage());
            }
        }
    }

    /** Drops every table this workload made. */
    void dropTables() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS rs_bench_inbox_order, rs_bench_inbox_counter, " + RECORD_TABLE + ", "
                    + CAMEL_TABLE + ", " + SI_PREFIX + "METADATA_STORE");
        }
    }

    /** Delivers {@code message} to the consumer of {@code variant}; {@code fail} makes its business work fail. */
    Verdict deliver(Variant variant, Message message, boolean fail) throws Exception {
        return switch (variant) {
            case BARE -> bare(message, fail);
            case RETRYSAFE -> retrySafe(message, fail);
            case RABBITMQ -> rabbitMq(message, fail);
            case CAMEL -> camel(message, fail);
            case SPRING_INTEGRATION -> springIntegration(message, fail);
        };
    }

    private Verdict bare(Message m, boolean fail) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                book(c, m, fail);
                c.commit();
                return Verdict.PROCESSED;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                if (e instanceof InjectedFailure) {
                    return Verdict.FAILED;
                }
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    private Verdict retrySafe(Message m, boolean fail) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(MessageIds.DEFAULT_HEADER, m.id().getBytes(StandardCharsets.UTF_8));
        if (fail) {
            headers.add(FAIL_HEADER, new byte[] {1});
        }
        ConsumerRecord<String, String> record = new ConsumerRecord<>(TOPIC, 0, offsets.getAndIncrement(),
                ConsumerRecord.NO_TIMESTAMP, TimestampType.NO_TIMESTAMP_TYPE, ConsumerRecord.NULL_SIZE,
                ConsumerRecord.NULL_SIZE, null, m.json(), headers, Optional.empty());
        return verdict(processor.process(record), m, fail);
    }

    private Verdict rabbitMq(Message m, boolean fail) {
        AMQP.BasicProperties properties = new AMQP.BasicProperties.Builder().messageId(m.id())
                .headers(fail ? Map.of(FAIL_HEADER, true) : null).build();
        com.rabbitmq.client.Delivery delivery = new com.rabbitmq.client.Delivery(
                new Envelope(offsets.getAndIncrement(), false, "", TOPIC), properties,
                m.json().getBytes(StandardCharsets.UTF_8));
        return verdict(rabbit.process(TOPIC, delivery), m, fail);
    }

    private static Verdict verdict(InboxResult result, Message m, boolean fail) {
        if (result instanceof InboxResult.Processed) {
            return Verdict.PROCESSED;
        } else if (result instanceof InboxResult.Replayed) {
            return Verdict.SKIPPED;
        } else if (result instanceof InboxResult.DeadLetter && fail) {
            return Verdict.FAILED;
        } else if (result instanceof InboxResult.RetryLater later) {
            return fail && later.reason() == RetryReason.DEAD_LETTER_FAILED ? Verdict.FAILED : Verdict.RETRY;
        }
        throw new IllegalStateException("unexpected result for message " + m.id() + ": " + result);
    }

    /** The record handler: the message's order, on the inbox's connection and in its transaction. */
    private void handle(ConsumerRecord<String, String> record, Connection connection, io.retrysafe.Attempt attempt)
            throws SQLException {
        Message m = parse(attempt.key().value(), record.value());
        book(connection, m, record.headers().lastHeader(FAIL_HEADER) != null);
    }

    private static Message parse(String id, String json) {
        // {"customer":N,"amount":M}, as Message.json() wrote it.
        int c = json.indexOf(':');
        int comma = json.indexOf(',', c);
        int a = json.indexOf(':', comma);
        return new Message(id, Integer.parseInt(json.substring(c + 1, comma)),
                Long.parseLong(json.substring(a + 1, json.length() - 1)));
    }

    /**
     * Camel's Idempotent Consumer EIP, eager with {@code removeOnFailure} (its defaults): {@code add}
     * commits the id in its own transaction, then the work, then {@code remove} if the work failed.
     */
    private Verdict camel(Message m, boolean fail) throws SQLException {
        boolean added;
        try {
            added = camel.add(m.id());
        } catch (org.springframework.dao.DataAccessException e) {
            // The database failed under add(). The exchange fails; the route's error handler or the
            // broker's redelivery tries it again later.
            return Verdict.RETRY;
        }
        if (!added) {
            return Verdict.SKIPPED;
        }
        Verdict verdict;
        try {
            verdict = bare(m, fail);
        } catch (SQLException | RuntimeException e) {
            camel.remove(m.id());
            throw e;
        }
        if (verdict == Verdict.FAILED) {
            camel.remove(m.id());
        }
        return verdict;
    }

    /**
     * Spring Integration: {@code putIfAbsent} and the business writes in one Spring transaction on the
     * same DataSource (JdbcMetadataStore's JdbcTemplate joins it); null means "was absent": process.
     */
    private Verdict springIntegration(Message m, boolean fail) {
        try {
            return springTransaction.execute(status -> {
                if (metadataStore.putIfAbsent(m.id(), Long.toString(System.currentTimeMillis())) != null) {
                    return Verdict.SKIPPED;
                }
                Connection c = DataSourceUtils.getConnection(dataSource);
                try {
                    book(c, m, fail);
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                } finally {
                    DataSourceUtils.releaseConnection(c, dataSource);
                }
                return Verdict.PROCESSED;
            });
        } catch (InjectedFailure e) {
            return Verdict.FAILED; // rolled back, the key's row with it
        }
    }

    /**
     * The business work: the order row and its customer's counter. With {@code fail}, holds its writes
     * for 300 ms and then fails, like a consumer that crashes before its commit: long enough for a
     * redelivery to arrive while it is in flight.
     */
    static void book(Connection c, Message m, boolean fail) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(INSERT_ORDER)) {
            ps.setString(1, m.id());
            ps.setInt(2, m.customer());
            ps.setLong(3, m.amount());
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(UPDATE_COUNTER)) {
            ps.setLong(1, m.amount());
            ps.setInt(2, m.customer());
            if (ps.executeUpdate() != 1) {
                throw new IllegalStateException("no counter for customer " + m.customer() + "; was reset() run?");
            }
        }
        if (fail) {
            try (Statement st = c.createStatement()) {
                st.execute("SELECT pg_sleep(0.3)");
            }
            throw new InjectedFailure(m.id());
        }
    }

    /** The business work's injected failure. */
    static final class InjectedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFailure(String id) {
            super("injected failure for message " + id, null, false, false);
        }
    }

    HikariDataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        try {
            camel.stop();
            metadataStore.stop();
        } finally {
            dataSource.close();
        }
    }
}
