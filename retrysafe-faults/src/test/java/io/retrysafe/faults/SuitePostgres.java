package io.retrysafe.faults;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The suite's own PostgreSQL, never the shared server: it is stopped, crashed and started again on
 * the same data directory and port while the service runs.
 *
 * <p>As a normal user it is zonky's {@link EmbeddedPostgres} (binaries from a Maven artifact: nothing
 * to install). PostgreSQL refuses to run as root, so as root (CI containers) the same server is run
 * from the machine's PostgreSQL binaries as the {@code postgres} OS user ({@code setpriv}); without
 * either the suite cannot run and says why.
 *
 * <p>{@code synchronous_commit} is on (zonky turns it off by default): a crash must not lose a commit
 * whose answer a client already has, or the suite would report the database's loss as a violation.
 */
final class SuitePostgres implements AutoCloseable {
    private static final Duration START_WAIT = Duration.ofSeconds(90);
    private static final String OS_USER = "postgres";

    private final Path dataDir;
    private final int port;
    private final boolean asRoot;
    private final Path binDir;
    private EmbeddedPostgres embedded;

    private SuitePostgres(Path dataDir, int port, boolean asRoot, Path binDir) {
        this.dataDir = dataDir;
        this.port = port;
        this.asRoot = asRoot;
        this.binDir = binDir;
    }

    /** Starts a new server; {@code workDir} holds its data directory (a fixed one, reused by every restart). */
    static SuitePostgres start(Path workDir) throws IOException, InterruptedException {
        int port = freePort();
        SuitePostgres pg;
        if (runningAsRoot()) {
            Path bin = systemBinaries().orElseThrow(() -> new IllegalStateException("PostgreSQL refuses to run as "
                    + "root and no PostgreSQL server binaries (initdb, pg_ctl) were found under /usr/lib/postgresql "
                    + "to run as the '" + OS_USER + "' user: run the suite as another user, or install PostgreSQL"));
            // Under a world-traversable directory that the postgres user may own: not the test's private temp dir.
            Path data = Files.createTempDirectory("retrysafe-faults-pg");
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx------"));
            run(List.of("chown", OS_USER, data.toString()));
            pg = new SuitePostgres(data, port, true, bin);
            pg.asUser(List.of(bin.resolve("initdb").toString(), "-D", data.toString(), "-U", "postgres", "-A", "trust",
                    "-E", "UTF-8", "--no-sync"));
        } else {
            pg = new SuitePostgres(Files.createDirectories(workDir.resolve("pgdata")), port, false, null);
        }
        pg.startServer();
        return pg;
    }

    int port() {
        return port;
    }

    String jdbcUrl() {
        return jdbcUrl(port);
    }

    static String jdbcUrl(int port) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(), "postgres", "");
    }

    /** A clean shutdown ({@code pg_ctl stop -m fast}) and a start on the same data directory and port. */
    synchronized void restart() throws IOException, InterruptedException {
        stop("fast");
        startServer();
    }

    /**
     * A crash ({@code pg_ctl stop -m immediate}: every process quits without a checkpoint) and a start,
     * which recovers from the WAL.
     */
    synchronized void crashAndRestart() throws IOException, InterruptedException {
        stop("immediate");
        startServer();
    }

    private void startServer() throws IOException, InterruptedException {
        if (asRoot) {
            String options = "-p " + port + " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + dataDir
                    + " -c synchronous_commit=on -c max_connections=100 -c fsync=on";
            asUser(List.of(binDir.resolve("pg_ctl").toString(), "-D", dataDir.toString(), "-l",
                    dataDir.resolve("server.log").toString(), "-o", options, "-w", "-t",
                    Long.toString(START_WAIT.toSeconds()), "start"));
        } else {
            embedded = EmbeddedPostgres.builder().setDataDirectory(dataDir).setCleanDataDirectory(false)
                    .setPort(port).setServerConfig("listen_addresses", "127.0.0.1")
                    .setServerConfig("synchronous_commit", "on").setServerConfig("max_connections", "100")
                    .setPGStartupWait(START_WAIT).setOutputRedirector(
                            ProcessBuilder.Redirect.appendTo(dataDir.getParent().resolve("pg.log").toFile()))
                    .start();
        }
    }

    private void stop(String mode) throws IOException, InterruptedException {
        List<String> stop = List.of(pgCtl().toString(), "-D", dataDir.toString(), "-m", mode, "-w", "-t", "60",
                "stop");
        if (asRoot) {
            asUser(stop);
        } else {
            run(stop);
            // Releases zonky's lock on the directory; its own stop finds no server and only logs that.
            embedded.close();
            embedded = null;
        }
    }

    /** pg_ctl of the binaries this server runs on (zonky's are unpacked to a directory of its own). */
    private Path pgCtl() throws IOException {
        if (binDir != null) {
            return binDir.resolve("pg_ctl");
        }
        long pid = Long.parseLong(Files.readAllLines(dataDir.resolve("postmaster.pid"), StandardCharsets.US_ASCII)
                .get(0).strip());
        Path postgres = ProcessHandle.of(pid).flatMap(p -> p.info().command()).map(Path::of)
                .orElseThrow(() -> new IOException("cannot tell the binary of postmaster " + pid));
        return postgres.resolveSibling("pg_ctl");
    }

    @Override
    public synchronized void close() throws IOException, InterruptedException {
        try {
            if (asRoot) {
                stop("fast");
            } else if (embedded != null) {
                embedded.close();
                embedded = null;
            }
        } finally {
            if (asRoot) {
                try (Stream<Path> files = Files.walk(dataDir)) {
                    files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
                }
            }
        }
    }

    private void asUser(List<String> command) throws IOException, InterruptedException {
        asPostgres(command);
    }

    /** Runs {@code command} as the {@code postgres} OS user (the caller is root); fails with its output. */
    static void asPostgres(List<String> command) throws IOException, InterruptedException {
        // setpriv execs the command as the user: no PAM session, no watching parent process in between.
        List<String> all = new ArrayList<>(List.of("setpriv", "--reuid=" + OS_USER, "--regid=" + OS_USER,
                "--init-groups", "--"));
        all.addAll(command);
        run(all);
    }

    /** Runs {@code command}, waiting at most 2 minutes; fails with its output unless it exits 0. */
    static void run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", command) + " failed:\n" + new String(out, StandardCharsets.UTF_8));
        }
    }

    /** The newest of the machine's PostgreSQL server binaries ({@code /usr/lib/postgresql/<version>/bin}). */
    static Optional<Path> systemBinaries() {
        Path root = Path.of("/usr/lib/postgresql");
        if (!Files.isDirectory(root)) {
            return Optional.empty();
        }
        try (Stream<Path> versions = Files.list(root)) {
            return versions.map(v -> v.resolve("bin")).filter(b -> Files.isExecutable(b.resolve("initdb"))
                    && Files.isExecutable(b.resolve("pg_ctl"))).max(Comparator.comparing(Path::toString));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    static boolean runningAsRoot() {
        try {
            return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | RuntimeException e) {
            return "root".equals(System.getProperty("user.name"));
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return socket.getLocalPort();
        }
    }
}
