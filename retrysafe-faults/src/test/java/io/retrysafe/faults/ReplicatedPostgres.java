package io.retrysafe.faults;

import io.retrysafe.testservices.SharedService;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A PostgreSQL primary and a streaming standby of it, the suite's own (never the shared server), for failover: the
 * primary crashes, the standby is promoted, and a new standby is copied from the new primary into the old one's
 * place. Replication is synchronous ({@code synchronous_standby_names = '*'}: a commit is acknowledged once the
 * standby has it) or asynchronous. From the machine's PostgreSQL binaries, run as the {@code postgres} OS user
 * when the suite runs as root (PostgreSQL refuses root).
 */
final class ReplicatedPostgres implements AutoCloseable {
    /** One server: its data directory and port. */
    record Node(Path dataDir, int port) {
        String jdbcUrl() {
            return SuitePostgres.jdbcUrl(port);
        }
    }

    private final Path bin;
    private final boolean asRoot;
    private final Path workDir;
    private Node primary;
    private Node standby;

    private ReplicatedPostgres(Path bin, boolean asRoot, Path workDir) {
        this.bin = bin;
        this.asRoot = asRoot;
        this.workDir = workDir;
    }

    /**
     * A new primary and its standby, streaming, the replication {@code synchronous} or not. Without the machine's
     * PostgreSQL binaries the test is skipped, or fails under {@code CI=true}.
     */
    static ReplicatedPostgres start(boolean synchronous) throws IOException, InterruptedException, SQLException {
        Path bin = SuitePostgres.systemBinaries().orElse(null);
        if (bin == null || !Files.isExecutable(bin.resolve("pg_basebackup"))) {
            return SharedService.unavailable(
                    "no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) under /usr/lib/postgresql");
        }
        boolean asRoot = SuitePostgres.runningAsRoot();
        // Under a world-traversable directory that the postgres user may own: not the test's private temp dir.
        Path work = Files.createTempDirectory("retrysafe-faults-replicated");
        Files.setPosixFilePermissions(work, PosixFilePermissions.fromString("rwxr-xr-x"));
        if (asRoot) {
            SuitePostgres.run(List.of("chown", "postgres", work.toString())); // the servers' logs are written there
        }
        ReplicatedPostgres pg = new ReplicatedPostgres(bin, asRoot, work);
        Node first = pg.node("a");
        pg.exec(List.of(bin.resolve("initdb").toString(), "-D", first.dataDir().toString(), "-U", "postgres", "-A",
                "trust", "-E", "UTF-8", "--no-sync"));
        pg.startServer(first);
        pg.primary = first;
        if (synchronous) {
            // In postgresql.auto.conf, so that every copy of this server (each later primary) has it too.
            try (Connection c = pg.connect(); Statement s = c.createStatement()) {
                s.execute("ALTER SYSTEM SET synchronous_standby_names = '*'");
                s.execute("SELECT pg_reload_conf()");
            }
        }
        pg.standby = pg.copyOfPrimary(pg.node("b"));
        return pg;
    }

    /** A node whose data directory (not made yet) is {@code name} under the work directory, on a free port. */
    private Node node(String name) throws IOException, InterruptedException {
        Path dir = workDir.resolve(name);
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        if (asRoot) {
            SuitePostgres.run(List.of("chown", "postgres", dir.toString()));
        }
        return new Node(dir, SuitePostgres.freePort());
    }

    Node primary() {
        return primary;
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(primary.jdbcUrl(), "postgres", "");
    }

    /**
     * Fails over: the primary crashes ({@code pg_ctl stop -m immediate}), the standby is promoted and becomes the
     * primary, and a new standby is copied from it into the old primary's data directory and port. Returns the new
     * primary; until the new standby streams, a synchronous primary holds its commits.
     */
    synchronized Node failover() throws IOException, InterruptedException {
        Node old = primary;
        exec(List.of(bin.resolve("pg_ctl").toString(), "-D", old.dataDir().toString(), "-m", "immediate", "-w",
                "stop"));
        exec(List.of(bin.resolve("pg_ctl").toString(), "-D", standby.dataDir().toString(), "-w", "-t", "60",
                "promote"));
        primary = standby;
        delete(old.dataDir());
        Files.createDirectories(old.dataDir());
        Files.setPosixFilePermissions(old.dataDir(), PosixFilePermissions.fromString("rwx------"));
        if (asRoot) {
            SuitePostgres.run(List.of("chown", "postgres", old.dataDir().toString()));
        }
        return primary;
    }

    /** Copies the primary into {@code target}'s directory as a standby streaming from it, and starts it. */
    synchronized Node copyOfPrimary(Node target) throws IOException, InterruptedException {
        exec(List.of(bin.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p",
                Integer.toString(primary.port()), "-U", "postgres", "-D", target.dataDir().toString(), "-R", "-X",
                "stream", "-c", "fast", "--no-sync"));
        startServer(target);
        standby = target;
        return target;
    }

    /** Whether the standby streams from the primary (and, with synchronous replication, as its synchronous one). */
    boolean standbyStreaming() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement();
                var rs = s.executeQuery("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }

    private void startServer(Node node) throws IOException, InterruptedException {
        // TCP only: a socket's lock file in the data directory would be copied into the next standby, and stop it.
        String options = "-p " + node.port() + " -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
                + " -c synchronous_commit=on -c fsync=on -c max_connections=100"
                + " -c wal_level=replica -c max_wal_senders=10 -c hot_standby=on";
        exec(List.of(bin.resolve("pg_ctl").toString(), "-D", node.dataDir().toString(), "-l",
                node.dataDir().getParent().resolve(node.dataDir().getFileName() + ".log").toString(), "-o", options,
                "-w", "-t", Long.toString(Duration.ofSeconds(90).toSeconds()), "start"));
    }

    private void exec(List<String> command) throws IOException, InterruptedException {
        if (asRoot) {
            SuitePostgres.asPostgres(command);
        } else {
            SuitePostgres.run(command);
        }
    }

    private static void delete(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        }
    }

    @Override
    public synchronized void close() throws IOException, InterruptedException {
        List<Node> nodes = new ArrayList<>();
        if (primary != null) {
            nodes.add(primary);
        }
        if (standby != null && standby != primary) {
            nodes.add(standby);
        }
        try {
            for (Node node : nodes) {
                try {
                    exec(List.of(bin.resolve("pg_ctl").toString(), "-D", node.dataDir().toString(), "-m",
                            "immediate", "-w", "stop"));
                } catch (IOException e) {
                    // Already stopped: nothing to do.
                }
            }
        } finally {
            delete(workDir);
        }
    }
}
