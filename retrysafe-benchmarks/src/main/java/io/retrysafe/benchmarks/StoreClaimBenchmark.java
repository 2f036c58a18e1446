package io.retrysafe.benchmarks;

import static io.retrysafe.benchmarks.RedisClaimBenchmark.FINGERPRINT;
import static io.retrysafe.benchmarks.RedisClaimBenchmark.LEASE;
import static io.retrysafe.benchmarks.RedisClaimBenchmark.RESPONSE;
import static io.retrysafe.benchmarks.RedisClaimBenchmark.RETENTION;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.dynamodb.DynamoDbIdempotencyStore;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestDynamo;
import io.retrysafe.testservices.TestRedis;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * What a standalone claim costs on each store, side by side in one run: the store is a {@code @Param}
 * ({@code postgresql}, {@code postgresql-manual-commit}, {@code redis}, {@code dynamodb}), and each is driven
 * through the store SPI alone, as the engine drives it in standalone mode (every call its own write, no engine,
 * no HTTP):
 *
 * <ul>
 *   <li>{@code claim}: one {@link IdempotencyStore#tryClaim} of a fresh key;
 *   <li>{@code claimAndComplete}: that, then {@link IdempotencyStore#complete} of the response
 *       {@link RedisClaimBenchmark} stores (201, two headers, a 152-byte JSON body).
 * </ul>
 *
 * One store per trial, shared by the JMH threads as an application's instance shares it:
 * {@code postgresql} is {@link JdbcIdempotencyStore} on a HikariCP pool with one connection per thread, in a
 * table of its own ({@code TestDatabases}: {@code RETRYSAFE_PG_URL}), analysed before every iteration;
 * {@code postgresql-manual-commit} is the same on a pool whose connections have auto-commit off, as many
 * applications configure theirs for their own transactions;
 * {@code redis} is {@link RedisIdempotencyStore} on one Lettuce connection, under a key prefix of its own
 * ({@code TestRedis}: {@code RETRYSAFE_REDIS_URL}); {@code dynamodb} is {@link DynamoDbIdempotencyStore} on
 * the SDK's synchronous client with the url-connection HTTP client, in a table of its own on the test
 * server ({@code TestDynamo}: {@code RETRYSAFE_DYNAMODB_URL}, default dynalite at 127.0.0.1:4567, else a
 * private dynalite). Each trial removes its table or keys at the end.
 *
 * <p>dynalite is a single-threaded Node.js process on LevelDB, not DynamoDB: its figures say what the store's
 * requests cost a local test server, not what they cost in a Region (there, each call is a network round trip
 * of a few milliseconds, and billed: docs/dynamodb.md, Capacity).
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar StoreClaimBenchmark -f 1 -wi 3 -w 5s -i 5 -r 10s -t 1
 * java -jar retrysafe-benchmarks/target/benchmarks.jar StoreClaimBenchmark -p store=dynamodb   # one store
 * </pre>
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
@State(Scope.Benchmark)
public class StoreClaimBenchmark {
    @Param({"postgresql", "postgresql-manual-commit", "redis", "dynamodb"})
    public String store;

    private IdempotencyStore idempotencyStore;
    /** What the trial opened, closed in reverse order at its end. */
    private final List<AutoCloseable> opened = new ArrayList<>();
    private HikariDataSource dataSource;
    private String table;
    private final AtomicLong sequence = new AtomicLong();
    private final String scope = "bench-" + UUID.randomUUID().toString().substring(0, 8);

    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) throws Exception {
        try {
            idempotencyStore = switch (store) {
                case "postgresql" -> postgresql(params.getThreads(), true);
                case "postgresql-manual-commit" -> postgresql(params.getThreads(), false);
                case "redis" -> redis();
                case "dynamodb" -> dynamodb();
                default -> throw new IllegalArgumentException("store must be postgresql, postgresql-manual-commit, "
                        + "redis or dynamodb, but was " + store);
            };
        } catch (Exception | Error e) {
            try {
                tearDown(); // JMH does not tear down a trial whose setup failed
            } catch (Exception t) {
                e.addSuppressed(t);
            }
            throw e;
        }
    }

    private IdempotencyStore postgresql(int threads, boolean autoCommit) {
        HikariConfig config = new HikariConfig();
        config.setPoolName("retrysafe-bench-store");
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(threads);
        config.setMinimumIdle(threads);
        config.setAutoCommit(autoCommit);
        table = "rs_bench_store_" + scope.substring("bench-".length());
        dataSource = new HikariDataSource(config);
        opened.add(() -> {
            try (HikariDataSource ds = dataSource; Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                c.setAutoCommit(true); // the pool's may be off
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        });
        JdbcIdempotencyStore jdbc = JdbcIdempotencyStore.builder(dataSource).table(table).build();
        jdbc.createSchema();
        return jdbc;
    }

    private IdempotencyStore redis() {
        RedisClient client = RedisClient.create(TestRedis.standaloneUri());
        opened.add(() -> client.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
        String prefix = "retrysafe-bench:" + scope + ":";
        opened.add(() -> {
            try (StatefulRedisConnection<String, String> admin = client.connect()) {
                RedisClaimBenchmark.unlinkAll(admin.sync(), prefix);
            }
        });
        RedisIdempotencyStore redis = RedisIdempotencyStore.builder(client).keyPrefix(prefix).build();
        opened.add(redis::close);
        redis.inspect(IdempotencyKey.of(scope, "connect")); // opens its connection, loads the scripts
        return redis;
    }

    private IdempotencyStore dynamodb() {
        String url = TestDynamo.url();
        DynamoDbClient client = DynamoDbClient.builder().endpointOverride(URI.create(url)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
                .httpClient(UrlConnectionHttpClient.create()).build();
        opened.add(client);
        String name = TestDynamo.uniqueTableName("retrysafe-bench");
        DynamoDbIdempotencyStore dynamo = DynamoDbIdempotencyStore.builder(client).tableName(name).build();
        opened.add(() -> client.deleteTable(r -> r.tableName(name)));
        dynamo.createTableIfAbsent();
        return dynamo;
    }

    /** See {@code PaymentWorkload.analyze()}: the empty table's plans would otherwise stay sequential scans. */
    @Setup(Level.Iteration)
    public void analyze() throws SQLException {
        if (dataSource != null) {
            try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
                c.setAutoCommit(true); // the pool's may be off, and a rolled-back ANALYZE keeps no statistics
                st.execute("ANALYZE " + table);
            }
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        Exception first = null;
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        opened.clear();
        if (first != null) {
            throw first;
        }
    }

    @Benchmark
    public ClaimResult claim() {
        return tryClaim(nextKey());
    }

    @Benchmark
    public FencedWrite claimAndComplete() {
        IdempotencyKey key = nextKey();
        OwnerToken token = ((ClaimResult.Claimed) tryClaim(key)).token();
        FencedWrite written = idempotencyStore.complete(key, token, RESPONSE, RETENTION);
        if (!(written instanceof FencedWrite.Committed)) {
            throw new IllegalStateException("complete of a fresh claim answered " + written);
        }
        return written;
    }

    private IdempotencyKey nextKey() {
        return IdempotencyKey.of(scope, Long.toString(sequence.getAndIncrement()));
    }

    private ClaimResult tryClaim(IdempotencyKey key) {
        ClaimResult result = idempotencyStore.tryClaim(new ClaimRequest(key, FINGERPRINT, OwnerToken.random(), LEASE,
                RETENTION));
        if (!(result instanceof ClaimResult.Claimed)) {
            throw new IllegalStateException("claim of a fresh key answered " + result);
        }
        return result;
    }
}
