package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import io.retrysafe.testservices.TestDatabases;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * What a standalone claim on PostgreSQL costs in CPU, by the form it is sent in: the three statements a claim
 * sends in a transaction that goes on after it (the lock bound, the insert, the bound's restore, in one round
 * trip: {@link PostgresSqlText#claimStatements()}), or the one statement a standalone claim sends (the insert
 * reading the bound from a sub-select: {@link PostgresSqlText#claimStatement()}), each bound as the JDBC store
 * binds it. Each claim is of a new key and a transaction of its own, on a connection in auto-commit, as a
 * standalone store's claim is, on each of {@code --connections} at once; the forms take turns in blocks of
 * {@code --claims} on each connection. Per claim: the CPU of the database's backends serving the connections
 * (their {@code /proc} schedstat, so the server must run on this machine), the CPU of the client's threads (the
 * driver's work), and the block's wall time over its claims. CPU changes less with the machine's other load than
 * throughput does. Usage (PostgreSQL found as by the tests): {@code java -cp
 * retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.ClaimStatementCpu [--blocks 6]
 * [--claims 20000] [--connections 1]}.
 */
public final class ClaimStatementCpu {
    private static final String TABLE = "rs_claim_cpu_bench";
    private static final String[] FORMS = {"three statements", "one statement"};

    private ClaimStatementCpu() {
    }

    public static void main(String[] args) throws Exception {
        int blocks = 6;
        int claims = 20_000;
        int connections = 1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--blocks" -> blocks = Integer.parseInt(args[++i]);
                case "--claims" -> claims = Integer.parseInt(args[++i]);
                case "--connections" -> connections = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; usage: [--blocks 6] [--claims 20000] [--connections 1]");
            }
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(connections + 1); // one more for the table's set-up and analysis
        PostgresSqlText text = new PostgresSqlText(TABLE, BindMarkers.QUESTION_MARKS);
        String[] sql = {text.claimStatements(), text.claimStatement()};
        TakingTurns turns = new TakingTurns(FORMS, new String[] {"backend CPU", "client CPU", "wall"}, blocks);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            PurgeAtScale.exec(pool, "DROP TABLE IF EXISTS " + TABLE);
            JdbcIdempotencyStore.builder(pool).table(TABLE).build().createSchema();
            ExecutorService threads = Executors.newFixedThreadPool(connections);
            List<Connection> open = new ArrayList<>();
            try {
                List<Path> backends = new ArrayList<>();
                for (int i = 0; i < connections; i++) {
                    Connection c = pool.getConnection();
                    open.add(c);
                    c.setAutoCommit(true);
                    Path backend = RoundTrips.backendSchedstat(c);
                    if (backend == null) {
                        throw new IllegalStateException("a backend's CPU cannot be read: is the server on this host?");
                    }
                    backends.add(backend);
                }
                System.out.printf(Locale.ROOT, "%s; %d blocks of %,d claims per form on each of %d connections,"
                        + " taking turns%n", TestDatabases.postgresJdbcUrl(), blocks, claims, connections);
                int perConnection = claims;
                TakingTurns.Block block = form -> blocks(threads, open, backends, sql[form], form, perConnection);
                turns.warmUp(block);
                PurgeAtScale.exec(pool, "VACUUM ANALYZE " + TABLE);
                turns.measure(block, (long) claims * connections);
            } finally {
                threads.shutdownNow();
                for (Connection c : open) {
                    c.close();
                }
                PurgeAtScale.exec(pool, "DROP TABLE IF EXISTS " + TABLE);
            }
        }
        turns.report("claim (wall: the block's time over its claims)");
    }

    /**
     * A block on every connection at once; returns the backends' CPU and the client threads' CPU, summed, and the
     * block's wall time, in nanoseconds.
     */
    private static double[] blocks(ExecutorService threads, List<Connection> connections, List<Path> backends,
            String sql, int form, int claims) throws Exception {
        List<Callable<double[]>> calls = new ArrayList<>();
        for (int i = 0; i < connections.size(); i++) {
            Connection c = connections.get(i);
            Path backend = backends.get(i);
            calls.add(() -> block(c, sql, form, claims, backend));
        }
        long start = System.nanoTime();
        double[] sum = new double[3];
        for (Future<double[]> done : threads.invokeAll(calls)) {
            double[] cost = done.get();
            sum[0] += cost[0];
            sum[1] += cost[1];
        }
        sum[2] = System.nanoTime() - start;
        return sum;
    }

    /** Runs {@code claims} claims in {@code form}: the backend's CPU and the client thread's, in ns. */
    private static double[] block(Connection c, String sql, int form, int claims, Path backend) throws SQLException {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        String prefix = UUID.randomUUID() + "-";
        byte[] fingerprint = {1, 2, 3, 4};
        long backendCpu = RoundTrips.runNanos(backend);
        long cpu = threads.getCurrentThreadCpuTime();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < claims; i++) {
                // As the store binds each form: the bound first and the row after it, or the row and the bound last.
                int row = form == 0 ? 2 : 1;
                ps.setString(form == 0 ? 1 : 7, "5000");
                ps.setString(row, "bench");
                ps.setString(row + 1, prefix + i);
                ps.setBytes(row + 2, fingerprint);
                ps.setObject(row + 3, UUID.randomUUID());
                ps.setLong(row + 4, 30_000);
                ps.setLong(row + 5, 86_400_000);
                ResultSet rs;
                if (form == 0) {
                    ps.execute(); // set_config's result, then the insert's
                    ps.getMoreResults();
                    rs = ps.getResultSet();
                } else {
                    rs = ps.executeQuery();
                }
                try (rs) {
                    if (!rs.next()) {
                        throw new IllegalStateException("a new key was not claimed");
                    }
                }
            }
        }
        return new double[] {RoundTrips.runNanos(backend) - backendCpu, threads.getCurrentThreadCpuTime() - cpu};
    }
}
