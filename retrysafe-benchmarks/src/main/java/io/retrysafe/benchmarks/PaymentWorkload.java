package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.metrics.IMetricsTracker;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StepCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.OwnerToken;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * A payment on PostgreSQL, run bare or under RetrySafe: lock the account row, update its balance,
 * insert the payment, insert a ledger entry, commit. Shared by {@link PaymentTransactionBenchmark},
 * {@link PaymentInterleavedBenchmark} and {@link RoundTrips} so all measure the same code.
 *
 * <p>Tables: {@code rs_bench_account} ({@value #ACCOUNTS} rows, one picked at random per payment so
 * that row locks rarely serialise threads), {@code rs_bench_payment}, {@code rs_bench_ledger}, the
 * idempotency records in {@code rs_bench_record}, and for the investigation variants
 * {@code rs_bench_extra}, {@code rs_bench_record_hot} and {@code rs_bench_record_last}.
 */
final class PaymentWorkload implements AutoCloseable {
    static final int ACCOUNTS = 10_000;
    static final String RECORD_TABLE = "rs_bench_record";
    /** TRANSACTIONAL_HOT's records: the same table without the expires_at index and with fillfactor 70. */
    static final String HOT_RECORD_TABLE = "rs_bench_record_hot";
    /** INSERT_LAST's records: the store's own schema. */
    static final String LAST_RECORD_TABLE = "rs_bench_record_last";
    /** KEY_LAST's records: the store's own schema. */
    static final String KEY_LAST_RECORD_TABLE = "rs_bench_record_key_last";
    static final String SCOPE = "bench";

    private static final long INITIAL_BALANCE = 1_000_000_000_000L;
    private static final ResponseCodec<String> CODEC = ResponseCodec.utf8();

    private static final String LOCK_ACCOUNT = "SELECT balance FROM rs_bench_account WHERE id = ? FOR UPDATE";
    private static final String UPDATE_BALANCE = "UPDATE rs_bench_account SET balance = ? WHERE id = ?";
    private static final String INSERT_PAYMENT =
            "INSERT INTO rs_bench_payment (id, account_id, amount, created_at) VALUES (?, ?, ?, now())";
    private static final String INSERT_LEDGER = "INSERT INTO rs_bench_ledger (payment_id, account_id, amount,"
            + " balance_after, created_at) VALUES (?, ?, ?, ?, now())";

    /** The variants; the benchmark's {@code @Param} values are their lower-case names. */
    enum Variant {
        /** The transaction alone. */
        BARE,
        /** The transaction inside {@link TransactionalRetrySafe#execute}: claim, work and response commit together. */
        TRANSACTIONAL,
        /** {@link RetrySafe#execute} on the JDBC store: claim committed, the transaction on its own connection, completion. */
        STANDALONE,
        /** Investigation only: the bare transaction plus one extra {@code SELECT 1} round trip before the lock. */
        BARE_PLUS_SELECT1,
        /** Investigation only: the bare transaction plus one extra insert (of a key-sized row) as its first statement. */
        BARE_PLUS_INSERT,
        /**
         * Investigation only: TRANSACTIONAL on a record table without the {@code expires_at} index and
         * with fillfactor 70, so that the completion's UPDATE changes no indexed column and finds room on
         * the page: a HOT update (no new index entries). The library unchanged; the table altered.
         */
        TRANSACTIONAL_HOT,
        /**
         * The transaction inside {@link TransactionalRetrySafe#execute} with {@link KeyOrder#LAST}: the
         * key looked up, the work, then the record inserted completed in the round trip that commits.
         */
        KEY_LAST,
        /** KEY_LAST with {@link KeyOrder#LAST_NO_LOOKUP}: nothing sent before the work; on KEY_LAST's table. */
        KEY_LAST_NO_LOOKUP,
        /**
         * Investigation only: the "key inserted last" probe written by hand before the library had
         * {@link KeyOrder#LAST}: the bare transaction, then the record inserted once, already COMPLETED
         * with its response, in the round trip that commits; no lookup first, so a retry would not
         * be replayed. The bound KEY_LAST cannot beat.
         */
        INSERT_LAST,
        /**
         * The checkout that calls out, written without RetrySafe: the provider's call (in this JVM, so that
         * only the database work differs between the two checkout variants), then the payment's one transaction.
         */
        CALL_THEN_TRANSACTION,
        /**
         * The same checkout as a phased operation: claim; local step {@code reserve} (lock the account, update
         * its balance) saved with the key; foreign step {@code charge} (the same in-JVM provider) with its
         * derived key; local step {@code book} (payment and ledger rows) saving the charge; completion.
         */
        PHASED;

        static Variant parse(String name) {
            return valueOf(name.toUpperCase(Locale.ROOT));
        }
    }

    private final HikariDataSource dataSource;
    private final JdbcIdempotencyStore store;
    private final JdbcIdempotencyStore hotStore;
    private final JdbcIdempotencyStore lastStore;
    private final JdbcIdempotencyStore keyLastStore;
    private final RetrySafe standalone;
    private final TransactionalRetrySafe transactional;
    private final TransactionalRetrySafe transactionalHot;
    private final TransactionalRetrySafe keyLast;
    private final TransactionalRetrySafe keyLastNoLookup;
    private final PhasedRetrySafe<Connection> phased;
    private final PhasedOperation<Payment, String, Connection> checkout;

    private PaymentWorkload(HikariDataSource dataSource) {
        this.dataSource = dataSource;
        this.store = JdbcIdempotencyStore.builder(dataSource).table(RECORD_TABLE).build();
        this.standalone = RetrySafe.builder(store).name("bench-standalone").build();
        this.transactional = TransactionalRetrySafe.of(RetrySafe.builder(store).name("bench-transactional").build());
        this.hotStore = JdbcIdempotencyStore.builder(dataSource).table(HOT_RECORD_TABLE).build();
        this.transactionalHot = TransactionalRetrySafe.of(RetrySafe.builder(hotStore).name("bench-hot").build());
        this.lastStore = JdbcIdempotencyStore.builder(dataSource).table(LAST_RECORD_TABLE).build();
        this.keyLastStore = JdbcIdempotencyStore.builder(dataSource).table(KEY_LAST_RECORD_TABLE).build();
        this.keyLast = TransactionalRetrySafe.of(RetrySafe.builder(keyLastStore).name("bench-key-last").build(),
                KeyOrder.LAST);
        this.keyLastNoLookup = TransactionalRetrySafe.of(RetrySafe.builder(keyLastStore)
                .name("bench-key-last-no-lookup").build(), KeyOrder.LAST_NO_LOOKUP);
        this.phased = PhasedRetrySafe.builder(standalone, JdbcPhaseJournal.of(store)).build();
        this.checkout = PhasedOperation.of("checkout", Payment.CODEC, CODEC, (p, phases) -> {
            long after = phases.local("reserve", LONG, c -> reserve(c, p));
            String charge = phases.foreign("charge", StepCodec.utf8(), PaymentWorkload::charge);
            return phases.local("book", StepCodec.utf8(), c -> book(c, p, after) + charge.length());
        });
    }

    private static final StepCodec<Long> LONG = new StepCodec<>() {
        @Override
        public byte[] encode(Long value) {
            return Long.toString(value).getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public Long decode(byte[] saved) {
            return Long.parseLong(new String(saved, StandardCharsets.US_ASCII));
        }
    };

    /** The provider, in this JVM: what both checkout variants call, so that it costs them the same. */
    private static String charge(String idempotencyKey) {
        return "ch_" + idempotencyKey.substring(0, 24);
    }

    /** Opens a pool of {@code poolSize} connections (all opened up front) and creates the tables if absent. */
    static PaymentWorkload open(String url, String user, String password, int poolSize) throws SQLException {
        return open(url, user, password, poolSize, null);
    }

    /** As {@link #open(String, String, String, int)}, counting pool checkouts into {@code checkouts} if not null. */
    static PaymentWorkload open(String url, String user, String password, int poolSize, LongAdder checkouts)
            throws SQLException {
        HikariConfig config = new HikariConfig();
        config.setPoolName("retrysafe-bench");
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(poolSize);
        config.setConnectionTimeout(Duration.ofSeconds(30).toMillis());
        if (checkouts != null) {
            config.setMetricsTrackerFactory((pool, stats) -> new IMetricsTracker() {
                @Override
                public void recordConnectionAcquiredNanos(long elapsedAcquiredNanos) {
                    checkouts.increment();
                }
            });
        }
        PaymentWorkload workload = new PaymentWorkload(new HikariDataSource(config));
        try {
            workload.createSchema();
        } catch (SQLException | RuntimeException e) {
            workload.close();
            throw e;
        }
        return workload;
    }

    private void createSchema() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_account (id integer PRIMARY KEY, balance bigint NOT NULL)");
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_payment (id uuid PRIMARY KEY,"
                    + " account_id integer NOT NULL REFERENCES rs_bench_account (id), amount bigint NOT NULL,"
                    + " created_at timestamptz NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS rs_bench_payment_account_idx ON rs_bench_payment (account_id)");
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_ledger (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    + " payment_id uuid NOT NULL REFERENCES rs_bench_payment (id),"
                    + " account_id integer NOT NULL, amount bigint NOT NULL, balance_after bigint NOT NULL,"
                    + " created_at timestamptz NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS rs_bench_ledger_account_idx ON rs_bench_ledger (account_id)");
            // Only for BARE_PLUS_INSERT: a row as wide as a claim, under a primary key of the same shape.
            st.execute("CREATE TABLE IF NOT EXISTS rs_bench_extra (scope varchar(255) NOT NULL,"
                    + " idem_key varchar(255) NOT NULL, fingerprint bytea NOT NULL, owner_token uuid NOT NULL,"
                    + " created_at timestamptz NOT NULL, PRIMARY KEY (scope, idem_key))");
        }
        store.createSchema();
        hotStore.createSchema();
        lastStore.createSchema();
        keyLastStore.createSchema();
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP INDEX IF EXISTS " + HOT_RECORD_TABLE + "_expires_at_idx");
            st.execute("ALTER TABLE " + HOT_RECORD_TABLE + " SET (fillfactor = 70)");
        }
    }

    /**
     * Empties every table, re-creates the accounts, and checkpoints, so that each trial starts from
     * the same state (the record table grows by one row per idempotent payment).
     */
    void reset() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("TRUNCATE rs_bench_ledger, rs_bench_payment, rs_bench_account, rs_bench_extra, " + RECORD_TABLE
                    + ", " + HOT_RECORD_TABLE + ", " + LAST_RECORD_TABLE + ", " + KEY_LAST_RECORD_TABLE + " RESTART IDENTITY");
            st.execute("INSERT INTO rs_bench_account (id, balance) SELECT g, " + INITIAL_BALANCE
                    + " FROM generate_series(1, " + ACCOUNTS + ") g");
            st.execute("VACUUM ANALYZE rs_bench_account, rs_bench_payment, rs_bench_ledger, rs_bench_extra, "
                    + RECORD_TABLE + ", " + HOT_RECORD_TABLE + ", " + LAST_RECORD_TABLE + ", " + KEY_LAST_RECORD_TABLE);
            try {
                st.execute("CHECKPOINT"); // superuser only; it just makes trials more alike
            } catch (SQLException e) {
                System.err.println("[retrysafe-bench] CHECKPOINT skipped: " + e.getMessage());
            }
        }
    }

    /**
     * {@code ANALYZE} of every table, at the start of each iteration: the trial starts from empty,
     * analysed tables, and a statement a connection prepared then (pgjdbc server-prepares after 5
     * executions) keeps its generic plan, a sequential scan, as the table grows, with autovacuum off
     * until the end of the trial. An {@code ANALYZE} invalidates those plans, so every iteration is
     * measured with the plans a production database (autovacuum on) would use.
     */
    void analyze() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("ANALYZE rs_bench_account, rs_bench_payment, rs_bench_ledger, rs_bench_extra, "
                    + RECORD_TABLE + ", " + HOT_RECORD_TABLE + ", " + LAST_RECORD_TABLE + ", " + KEY_LAST_RECORD_TABLE);
        }
    }

    /** One payment in the given variant; returns its receipt. */
    String pay(Variant variant) throws Exception {
        Payment p = Payment.random();
        return switch (variant) {
            case BARE -> bare(p, Extra.NONE);
            case BARE_PLUS_SELECT1 -> bare(p, Extra.SELECT1);
            case BARE_PLUS_INSERT -> bare(p, Extra.INSERT);
            case TRANSACTIONAL -> {
                try (Connection c = dataSource.getConnection()) {
                    yield stored(transactional.execute(c, p.key(), p.fingerprint(), CODEC,
                            attempt -> transfer(c, p, Extra.NONE)));
                }
            }
            case TRANSACTIONAL_HOT -> {
                try (Connection c = dataSource.getConnection()) {
                    yield stored(transactionalHot.execute(c, p.key(), p.fingerprint(), CODEC,
                            attempt -> transfer(c, p, Extra.NONE)));
                }
            }
            case KEY_LAST -> {
                try (Connection c = dataSource.getConnection()) {
                    yield stored(keyLast.execute(c, p.key(), p.fingerprint(), CODEC,
                            attempt -> transfer(c, p, Extra.NONE)));
                }
            }
            case KEY_LAST_NO_LOOKUP -> {
                try (Connection c = dataSource.getConnection()) {
                    yield stored(keyLastNoLookup.execute(c, p.key(), p.fingerprint(), CODEC,
                            attempt -> transfer(c, p, Extra.NONE)));
                }
            }
            case INSERT_LAST -> insertLast(p);
            case CALL_THEN_TRANSACTION -> {
                String charge = charge(p.key().value());
                yield bare(p, Extra.NONE) + charge.length();
            }
            case PHASED -> stored(phased.execute(p.key(), p.fingerprint(), checkout, p));
            case STANDALONE -> stored(standalone.execute(p.key(), p.fingerprint(), CODEC,
                    attempt -> bare(p, Extra.NONE)));
        };
    }

    private enum Extra { NONE, SELECT1, INSERT }

    /** The transaction on a connection of its own, auto-commit switched off and restored as an application would. */
    private String bare(Payment p, Extra extra) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                String receipt = transfer(c, p, extra);
                c.commit();
                return receipt;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    private static final String INSERT_COMPLETED = "INSERT INTO " + LAST_RECORD_TABLE + " (scope, idem_key,"
            + " fingerprint, status, owner_token, attempt, created_at, lease_expires_at, completed_at, expires_at,"
            + " response_status, response_headers, response_body) VALUES (?, ?, ?, 'COMPLETED', ?, 1,"
            + " statement_timestamp(), statement_timestamp(), statement_timestamp(),"
            + " statement_timestamp() + ? * interval '1 millisecond', ?, ?, ?);COMMIT";

    /** INSERT_LAST: the bare transaction, then the completed record and the commit in one round trip. */
    private String insertLast(Payment p) throws SQLException {
        Fingerprint fingerprint = p.fingerprint();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                String receipt = transfer(c, p, Extra.NONE);
                StoredResponse response = CODEC.encode(receipt);
                try (PreparedStatement ps = c.prepareStatement(INSERT_COMPLETED)) {
                    ps.setString(1, p.key().scope());
                    ps.setString(2, p.key().value());
                    ps.setBytes(3, fingerprint.bytes());
                    ps.setObject(4, OwnerToken.random().value());
                    ps.setLong(5, OperationPolicy.DEFAULT_RETENTION.toMillis());
                    ps.setInt(6, response.status());
                    ps.setString(7, "");
                    ps.setBytes(8, response.body());
                    ps.execute();
                }
                c.commit(); // already committed by the statement: pgjdbc sees an idle connection and sends nothing
                return receipt;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** The statements of the payment, one round trip each; the caller owns the transaction. */
    private static String transfer(Connection c, Payment p, Extra extra) throws SQLException {
        if (extra == Extra.SELECT1) {
            try (PreparedStatement ps = c.prepareStatement("SELECT 1"); ResultSet rs = ps.executeQuery()) {
                rs.next();
            }
        } else if (extra == Extra.INSERT) {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO rs_bench_extra (scope, idem_key, fingerprint,"
                    + " owner_token, created_at) VALUES (?, ?, ?, ?, statement_timestamp())")) {
                ps.setString(1, p.key().scope());
                ps.setString(2, p.key().value());
                ps.setBytes(3, p.fingerprint().bytes());
                ps.setObject(4, p.paymentId());
                ps.executeUpdate();
            }
        }
        return book(c, p, reserve(c, p));
    }

    /** The payment's first half: lock the account and take the amount; returns the balance after. */
    private static long reserve(Connection c, Payment p) throws SQLException {
        long balance;
        try (PreparedStatement ps = c.prepareStatement(LOCK_ACCOUNT)) {
            ps.setInt(1, p.account());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalStateException("no account " + p.account() + "; was reset() run?");
                }
                balance = rs.getLong(1);
            }
        }
        if (balance < p.amount()) {
            throw new IllegalStateException("account " + p.account() + " has " + balance + ", needs " + p.amount());
        }
        long after = balance - p.amount();
        try (PreparedStatement ps = c.prepareStatement(UPDATE_BALANCE)) {
            ps.setLong(1, after);
            ps.setInt(2, p.account());
            ps.executeUpdate();
        }
        return after;
    }

    /** The payment's second half: the payment and its ledger entry; returns the receipt. */
    private static String book(Connection c, Payment p, long after) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(INSERT_PAYMENT)) {
            ps.setObject(1, p.paymentId());
            ps.setInt(2, p.account());
            ps.setLong(3, p.amount());
            ps.executeUpdate();
        }
        try (PreparedStatement ps = c.prepareStatement(INSERT_LEDGER)) {
            ps.setObject(1, p.paymentId());
            ps.setInt(2, p.account());
            ps.setLong(3, -p.amount());
            ps.setLong(4, after);
            ps.executeUpdate();
        }
        return "{\"payment\":\"" + p.paymentId() + "\",\"account\":" + p.account() + ",\"balance\":" + after + "}";
    }

    /** First-time requests only: anything but an executed, stored outcome means the benchmark is broken. */
    private static String stored(Outcome<String> outcome) {
        if (outcome instanceof Outcome.Executed<String> e && e.completion() == Outcome.Completion.STORED) {
            return e.value();
        }
        throw new IllegalStateException("expected a first-time request to run and be stored, but got " + outcome);
    }

    HikariDataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        dataSource.close();
    }

    /** One request: a fresh key (scope "bench", a random UUID), an account, an amount, and its fingerprint. */
    private record Payment(IdempotencyKey key, UUID paymentId, int account, long amount) {
        /** The phased checkout's saved input: the payment's own fields, the key aside. */
        static final StepCodec<Payment> CODEC = new StepCodec<>() {
            @Override
            public byte[] encode(Payment p) {
                return (p.paymentId + " " + p.account + " " + p.amount).getBytes(StandardCharsets.US_ASCII);
            }

            @Override
            public Payment decode(byte[] saved) {
                String[] f = new String(saved, StandardCharsets.US_ASCII).split(" ");
                return new Payment(null, UUID.fromString(f[0]), Integer.parseInt(f[1]), Long.parseLong(f[2]));
            }
        };

        static Payment random() {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            return new Payment(IdempotencyKey.of(SCOPE, uuid(r).toString()), uuid(r), 1 + r.nextInt(ACCOUNTS),
                    1 + r.nextInt(10_000));
        }

        Fingerprint fingerprint() {
            String body = "{\"account\":" + account + ",\"amount\":" + amount + "}";
            return Fingerprint.sha256(("POST /payments application/json " + body).getBytes(StandardCharsets.UTF_8));
        }

        // Version-4 layout from ThreadLocalRandom: UUID.randomUUID() would add SecureRandom's lock to every variant.
        private static UUID uuid(ThreadLocalRandom r) {
            long msb = (r.nextLong() & ~0xf000L) | 0x4000L;
            long lsb = (r.nextLong() & 0x3fffffffffffffffL) | 0x8000000000000000L;
            return new UUID(msb, lsb);
        }
    }
}
