package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Claim + complete throughput against a record table that already holds {@code rows} unexpired
 * records: {@code TransactionalRetrySafe.execute} with a fresh key and no business work, that is the
 * claim ({@code INSERT … ON CONFLICT}), the completion ({@code UPDATE}) and the commit, the store's
 * own cost per request. Side by side by table size and by key shape:
 *
 * <ul>
 *   <li>{@code keys=uuidv7}: UUIDv7-like keys (time first), as {@code IdempotencyKeys.uuidV7()}
 *       makes them; inserts land at the right edge of each scope's range of the primary key;
 *   <li>{@code keys=random}: random (v4) keys, inserts land all over the primary key, whose pages
 *       then must all be in memory.
 * </ul>
 *
 * <p>The fill is {@code INSERT … SELECT … generate_series} into the store's own table (indexes
 * dropped during the fill and built again after it, as their definitions were), then
 * {@code VACUUM ANALYZE} and {@code CHECKPOINT}: COMPLETED records with a 32-byte fingerprint, a
 * response body of about 90 bytes, 36-character keys, scopes {@code user-NNNN|POST /payments} over
 * 1,000 users, created over the 20 hours before the fill and expiring 24 hours after creation, so
 * none is expired for at least 4 hours. The benchmark's own keys use the same scopes.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RecordTableSizeBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 1
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RecordTableSizeBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 8
 * </pre>
 * runs 0, 100,000 and 1,000,000 rows with both key shapes. 10 million rows (about 4 GB per table
 * with its indexes; a fill takes minutes), kept between the two thread counts and dropped by the
 * last run:
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RecordTableSizeBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 1 \
 *     -p rows=0,10000000 -p keep=true
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RecordTableSizeBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 8 \
 *     -p rows=0,10000000 -p keep=false
 * </pre>
 * With {@code keep=true} a trial's table ({@code rs_bench_size_<rows>_<keys>}) is left in place and
 * a later run with the same rows and keys reuses it (the rows the benchmark added are deleted first)
 * if it was filled less than 3 hours ago; otherwise it is filled again. With {@code keep=false} (the
 * default) the table is dropped at the end of its trial. Each trial has its own pool (threads + 2).
 * PostgreSQL as in {@link TestDatabases}; mind that its {@code shared_buffers} and the machine's
 * memory decide where the random keys' index stops fitting in memory.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
@State(Scope.Benchmark)
public class RecordTableSizeBenchmark {
    static final int USERS = 1_000;
    static final String FILLS_TABLE = "rs_bench_size_fill";
    /** Records are created over this span before the fill, and expire 24 hours after creation. */
    static final Duration FILL_SPAN = Duration.ofHours(20);
    /** A kept table is reused only this long after its fill, while its oldest record is over an hour from expiry. */
    static final Duration REUSE_FOR = Duration.ofHours(3);

    private static final ResponseCodec<String> CODEC = ResponseCodec.utf8();
    private static final String RECEIPT = "{\"payment\":\"7d0c4b0e-9d55-4a8e-9a43-1c2b3d4e5f60\",\"balance\":42}";
    private static final Fingerprint FINGERPRINT =
            Fingerprint.sha256("POST /payments application/json {\"amount\":1}".getBytes(StandardCharsets.UTF_8));

    /** Records in the table before the trial. */
    @Param({"0", "100000", "1000000"})
    public long rows;

    /** {@code uuidv7} or {@code random}. */
    @Param({"uuidv7", "random"})
    public String keys;

    /** Keep the filled table after the trial, for a later run with the same rows and keys. */
    @Param({"false"})
    public boolean keep;

    private HikariDataSource dataSource;
    private TransactionalRetrySafe transactional;
    private String table;
    private boolean randomKeys;

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        if (rows < 0) {
            throw new IllegalArgumentException("rows must not be negative, but was " + rows);
        }
        randomKeys = switch (keys) {
            case "uuidv7" -> false;
            case "random" -> true;
            default -> throw new IllegalArgumentException("keys must be uuidv7 or random, but was " + keys);
        };
        table = "rs_bench_size_" + rows + "_" + keys;
        HikariConfig config = new HikariConfig();
        config.setPoolName("retrysafe-bench-size");
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(params.getThreads() + 2);
        config.setMinimumIdle(params.getThreads() + 2);
        dataSource = new HikariDataSource(config);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).table(table).build();
        store.createSchema();
        transactional = TransactionalRetrySafe.of(RetrySafe.builder(store).name("bench-size").build());
        try {
            prepare();
        } catch (SQLException | RuntimeException e) {
            tearDown(); // JMH does not tear down a trial whose setup failed
            throw e;
        }
    }

    /** See {@code PaymentWorkload.analyze()}: the empty table's plans would otherwise stay sequential scans. */
    @Setup(Level.Iteration)
    public void analyze() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("ANALYZE " + table);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws SQLException {
        if (dataSource == null) {
            return;
        }
        try {
            if (!keep) {
                try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
                    st.execute("DROP TABLE IF EXISTS " + table);
                    st.execute("DELETE FROM " + FILLS_TABLE + " WHERE table_name = '" + table + "'");
                    st.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM " + FILLS_TABLE + ") THEN DROP TABLE "
                            + FILLS_TABLE + "; END IF; END $$");
                }
            }
        } finally {
            dataSource.close();
        }
    }

    @Benchmark
    public String claimAndComplete() throws SQLException {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        IdempotencyKey key = IdempotencyKey.of(scope(r.nextInt(USERS)), (randomKeys ? uuidV4(r) : uuidV7(r)).toString());
        try (Connection c = dataSource.getConnection()) {
            Outcome<String> outcome = transactional.execute(c, key, FINGERPRINT, CODEC, attempt -> RECEIPT);
            if (outcome instanceof Outcome.Executed<String> e && e.completion() == Outcome.Completion.STORED) {
                return e.value();
            }
            throw new IllegalStateException("expected a fresh key to run and be stored, but got " + outcome);
        }
    }

    static String scope(int user) {
        return String.format(Locale.ROOT, "user-%04d|POST /payments", user);
    }

    /** Reuses a kept table filled recently with the same rows, or fills it; then vacuums and checkpoints. */
    private void prepare() throws SQLException {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + FILLS_TABLE + " (table_name varchar(63) PRIMARY KEY,"
                    + " rows bigint NOT NULL, filled_at timestamptz NOT NULL)");
            boolean reuse = false;
            try (PreparedStatement ps = c.prepareStatement("SELECT rows = ? AND filled_at > now() - ? * interval"
                    + " '1 millisecond' FROM " + FILLS_TABLE + " WHERE table_name = ?")) {
                ps.setLong(1, rows);
                ps.setLong(2, REUSE_FOR.toMillis());
                ps.setString(3, table);
                try (ResultSet rs = ps.executeQuery()) {
                    reuse = rs.next() && rs.getBoolean(1);
                }
            }
            long started = System.nanoTime();
            if (reuse) {
                // Only what earlier trials added is newer than the fill.
                st.execute("DELETE FROM " + table + " WHERE created_at > (SELECT filled_at FROM " + FILLS_TABLE
                        + " WHERE table_name = '" + table + "')");
                log("reusing %s (%,d rows filled earlier)", table, rows);
            } else {
                fill(c, st);
                log("filled %s with %,d rows in %.1f s", table, rows, (System.nanoTime() - started) / 1e9);
            }
            st.execute("VACUUM ANALYZE " + table);
            try {
                st.execute("CHECKPOINT"); // superuser only; it just makes trials more alike
            } catch (SQLException e) {
                log("CHECKPOINT skipped: %s", e.getMessage());
            }
            try (ResultSet rs = st.executeQuery("SELECT pg_size_pretty(pg_table_size('" + table + "')),"
                    + " pg_size_pretty(pg_indexes_size('" + table + "'))")) {
                rs.next();
                log("%s: table %s, indexes %s, ready after %.1f s", table, rs.getString(1), rs.getString(2),
                        (System.nanoTime() - started) / 1e9);
            }
        }
    }

    /**
     * Empties the table and fills it with {@code rows} records, its indexes (primary key included)
     * dropped during the insert and built again from their own definitions after it.
     */
    private void fill(Connection c, Statement st) throws SQLException {
        List<String> constraints = new ArrayList<>();
        List<String> constraintNames = new ArrayList<>();
        try (ResultSet rs = st.executeQuery("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                + " WHERE conrelid = '" + table + "'::regclass AND contype IN ('p', 'u')")) {
            while (rs.next()) {
                constraintNames.add(rs.getString(1));
                constraints.add("ALTER TABLE " + table + " ADD CONSTRAINT " + rs.getString(1) + " " + rs.getString(2));
            }
        }
        List<String> indexes = new ArrayList<>();
        List<String> indexNames = new ArrayList<>();
        try (ResultSet rs = st.executeQuery("SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x"
                + " JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = '" + table + "'::regclass"
                + " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)")) {
            while (rs.next()) {
                indexNames.add(rs.getString(1));
                indexes.add(rs.getString(2));
            }
        }
        st.execute("DELETE FROM " + FILLS_TABLE + " WHERE table_name = '" + table + "'");
        st.execute("TRUNCATE " + table);
        if (rows > 0) {
            for (String name : constraintNames) {
                st.execute("ALTER TABLE " + table + " DROP CONSTRAINT " + name);
            }
            for (String name : indexNames) {
                st.execute("DROP INDEX " + name);
            }
            st.execute("SET maintenance_work_mem = '256MB'");
            String key = randomKeys ? "gen_random_uuid()::text"
                    // UUIDv7 layout: 48-bit milliseconds, version 7, 12 random bits, variant, 62 random bits.
                    : "substr(t, 1, 8) || '-' || substr(t, 9, 4) || '-7' || substr(h, 1, 3) || '-'"
                            + " || substr('89ab', 1 + (get_byte(decode(substr(h, 4, 2), 'hex'), 0) % 4), 1)"
                            + " || substr(h, 6, 3) || '-' || substr(h, 9, 12)";
            st.execute("INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt,"
                    + " created_at, lease_expires_at, completed_at, expires_at, response_status, response_headers,"
                    + " response_body)"
                    + " SELECT 'user-' || lpad((g % " + USERS + ")::text, 4, '0') || '|POST /payments', " + key + ","
                    + " sha256(convert_to(g::text, 'UTF8')), 'COMPLETED', gen_random_uuid(), 1,"
                    + " created, created + interval '30 seconds', created + interval '5 milliseconds',"
                    + " created + interval '24 hours', 201, '',"
                    + " convert_to('{\"payment\":\"' || gen_random_uuid() || '\",\"account\":' || (g % 10000)"
                    + " || ',\"balance\":' || (1000000000 - g) || '}', 'UTF8')"
                    + " FROM (SELECT g, lpad(to_hex(ms), 12, '0') AS t, md5(g::text || 'retrysafe') AS h,"
                    + " to_timestamp(ms / 1000.0) AS created FROM (SELECT g, (extract(epoch FROM now()) * 1000)::bigint"
                    + " - (" + rows + " - g) * " + FILL_SPAN.toMillis() + " / " + rows + " AS ms"
                    + " FROM generate_series(1::bigint, " + rows + ") g) s) f");
            for (String ddl : constraints) {
                st.execute(ddl);
            }
            for (String ddl : indexes) {
                st.execute(ddl);
            }
            st.execute("RESET maintenance_work_mem");
        }
        st.execute("INSERT INTO " + FILLS_TABLE + " (table_name, rows, filled_at) VALUES ('" + table + "', " + rows
                + ", clock_timestamp())");
    }

    /** A UUIDv7-like key: now in milliseconds, then random bits (no per-JVM counter, unlike IdempotencyKeys). */
    static UUID uuidV7(ThreadLocalRandom r) {
        long msb = (System.currentTimeMillis() << 16) | 0x7000L | (r.nextLong() & 0x0fffL);
        long lsb = (r.nextLong() & 0x3fffffffffffffffL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }

    /** Version-4 layout from ThreadLocalRandom: UUID.randomUUID() would add SecureRandom's lock. */
    static UUID uuidV4(ThreadLocalRandom r) {
        long msb = (r.nextLong() & ~0xf000L) | 0x4000L;
        long lsb = (r.nextLong() & 0x3fffffffffffffffL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }

    private static void log(String format, Object... args) {
        System.out.println("[retrysafe-bench] " + String.format(Locale.ROOT, format, args));
    }
}
