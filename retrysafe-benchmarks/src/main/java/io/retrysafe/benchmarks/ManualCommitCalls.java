package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;

/**
 * What a standalone claim and its completion cost on PostgreSQL through {@link JdbcIdempotencyStore}, on a pool whose
 * connection has auto-commit on and on one whose connection has it off, as applications that run their own
 * transactions configure theirs. One connection per pool, one store per pool on the same table; the two take turns
 * in blocks of {@code --calls} claims of a new key, each followed by its completion. Per claim and completion: the
 * CPU of the pool's database backend (its {@code /proc} schedstat, so the server must run on this machine), the
 * client thread's CPU, and the wall time. Usage (PostgreSQL found as by the tests): {@code java -cp
 * retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.ManualCommitCalls [--blocks 6]
 * [--calls 5000]}.
 */
public final class ManualCommitCalls {
    private static final String TABLE = "rs_manual_commit_bench";
    private static final String[] POOLS = {"auto-commit on", "auto-commit off"};
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofDays(1);
    private static final StoredResponse RESPONSE = StoredResponse.of(201,
            "{\"id\":\"p-1\",\"status\":\"paid\"}".getBytes(StandardCharsets.UTF_8));

    private ManualCommitCalls() {
    }

    public static void main(String[] args) throws Exception {
        int blocks = 6;
        int calls = 5_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--blocks" -> blocks = Integer.parseInt(args[++i]);
                case "--calls" -> calls = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; usage: [--blocks 6] [--calls 5000]");
            }
        }
        TakingTurns turns = new TakingTurns(POOLS, new String[] {"backend CPU", "client CPU", "wall"}, blocks);
        try (HikariDataSource auto = pool(true); HikariDataSource manual = pool(false)) {
            HikariDataSource[] pools = {auto, manual};
            PurgeAtScale.exec(auto, "DROP TABLE IF EXISTS " + TABLE);
            try {
                JdbcIdempotencyStore.builder(auto).table(TABLE).build().createSchema();
                JdbcIdempotencyStore[] stores = new JdbcIdempotencyStore[POOLS.length];
                Path[] backends = new Path[POOLS.length];
                for (int p = 0; p < POOLS.length; p++) {
                    stores[p] = JdbcIdempotencyStore.builder(pools[p]).table(TABLE).build();
                    try (Connection c = pools[p].getConnection()) { // the pool's one connection, kept open
                        backends[p] = RoundTrips.backendSchedstat(c);
                    }
                    if (backends[p] == null) {
                        throw new IllegalStateException("a backend's CPU cannot be read: is the server on this host?");
                    }
                }
                System.out.printf(Locale.ROOT, "%s; %d blocks of %,d claims and completions per pool, taking turns%n",
                        TestDatabases.postgresJdbcUrl(), blocks, calls);
                int perBlock = calls;
                TakingTurns.Block block = p -> block(stores[p], backends[p], perBlock);
                turns.warmUp(block);
                PurgeAtScale.exec(auto, "VACUUM ANALYZE " + TABLE);
                turns.measure(block, calls);
            } finally {
                PurgeAtScale.exec(auto, "DROP TABLE IF EXISTS " + TABLE);
            }
        }
        turns.report("claim and completion");
    }

    private static HikariDataSource pool(boolean autoCommit) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(1);
        config.setMinimumIdle(1);
        config.setAutoCommit(autoCommit);
        return new HikariDataSource(config);
    }

    /** {@code calls} claims of a new key, each completed: the backend's CPU, the client thread's, the wall, in ns. */
    private static double[] block(JdbcIdempotencyStore store, Path backend, int calls) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        String prefix = UUID.randomUUID() + "-";
        Fingerprint fingerprint = Fingerprint.sha256(prefix.getBytes(StandardCharsets.UTF_8));
        long backendCpu = RoundTrips.runNanos(backend);
        long cpu = threads.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            IdempotencyKey key = IdempotencyKey.of("bench", prefix + i);
            OwnerToken token = OwnerToken.random();
            if (!(store.tryClaim(new ClaimRequest(key, fingerprint, token, LEASE, RETENTION))
                    instanceof ClaimResult.Claimed)) {
                throw new IllegalStateException("a new key was not claimed");
            }
            if (store.complete(key, token, RESPONSE, RETENTION) != FencedWrite.COMMITTED) {
                throw new IllegalStateException("a claimed key was not completed");
            }
        }
        long wall = System.nanoTime() - start;
        return new double[] {RoundTrips.runNanos(backend) - backendCpu, threads.getCurrentThreadCpuTime() - cpu, wall};
    }
}
