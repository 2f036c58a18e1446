package io.retrysafe.testservices;

import static io.retrysafe.testservices.SharedService.env;
import static io.retrysafe.testservices.SharedService.isCi;
import static io.retrysafe.testservices.SharedService.log;
import static io.retrysafe.testservices.SharedService.unavailable;
import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;

/**
 * Redis for RetrySafe's own tests.
 *
 * <p>{@link #standaloneUri()}: the shared local Redis, from {@code RETRYSAFE_REDIS_URL} (default
 * {@code redis://127.0.0.1:6379}). Tests on it use a key prefix of their own and never flush
 * anything (no {@code FLUSHALL}, no {@code SCRIPT FLUSH}): others use that server too.
 *
 * <p>{@link #startServer(Path)}, {@link #startCluster(Path)} and {@link #startSentinel(Path, Server, String)}:
 * throwaway servers that the test starts as child processes of its JVM on loopback ports, for what must
 * not touch the shared server (server-wide commands), for a real Redis Cluster of three masters, and for
 * a Sentinel that names a private server as its master. They need {@code redis-server} and
 * {@code redis-cli} on the {@code PATH}.
 *
 * <p>As in {@link TestDatabases}: if the local Redis does not answer or the binaries are missing, the
 * calling test is aborted (reported as skipped, with the reason) - unless {@code CI=true}, where the
 * services are mandatory and the test fails.
 */
public final class TestRedis {

    static final String DEFAULT_URL = "redis://127.0.0.1:6379";

    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration CLUSTER_CREATE_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration CLUSTER_OK_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration POLL = Duration.ofMillis(25);
    /** A cluster node also listens on its port + 10000 (the cluster bus). */
    private static final int CLUSTER_BUS_OFFSET = 10_000;
    private static final int START_ATTEMPTS = 3;
    private static final String LOOPBACK = "127.0.0.1";

    private static final Object LOCK = new Object();
    // Guarded by LOCK; probed once per JVM.
    private static RedisURI standalone;
    private static String standaloneFailure;

    /** Every server process still running, killed by a shutdown hook if a test never closed it. */
    private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> RUNNING.forEach(Process::destroyForcibly),
                "retrysafe-test-redis-shutdown"));
    }

    private TestRedis() {}

    // ---------------------------------------------------------------- the shared local Redis

    /**
     * The shared local Redis, checked with a {@code PING}. If it does not answer, aborts the calling
     * test (skipped, with the reason), or fails it when {@code CI=true}.
     */
    public static RedisURI standaloneUri() {
        RedisURI uri;
        String failure;
        synchronized (LOCK) {
            if (standalone == null && standaloneFailure == null) {
                String url = env("RETRYSAFE_REDIS_URL", DEFAULT_URL);
                RedisURI configured = RedisURI.create(url);
                String problem = ping(configured);
                if (problem == null) {
                    log("Redis: using " + configured + " (reachable)");
                    standalone = configured;
                } else {
                    standaloneFailure = "Redis not reachable at " + configured + ": " + problem
                            + "; start one or set RETRYSAFE_REDIS_URL (e.g. redis://127.0.0.1:6379)";
                    log(standaloneFailure + (isCi() ? " (CI=true: failing)" : " (skipping its tests)"));
                }
            }
            uri = standalone;
            failure = standaloneFailure;
        }
        if (uri != null) {
            return RedisURI.builder(uri).build(); // a copy: callers may change theirs
        }
        return unavailable(failure);
    }

    /** Null if the server answers PING within the probe timeout, else a one-line reason. */
    private static String ping(RedisURI configured) {
        RedisURI probe = RedisURI.builder(configured).withTimeout(PROBE_TIMEOUT).build();
        RedisClient client = RedisClient.create(probe);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            String answer = c.sync().ping();
            return "PONG".equals(answer) ? null : "PING answered " + answer;
        } catch (RuntimeException e) {
            String message = e.getMessage();
            return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.strip());
        } finally {
            client.shutdown(Duration.ZERO, PROBE_TIMEOUT);
        }
    }

    // ---------------------------------------------------------------- throwaway servers

    /**
     * Starts a private {@code redis-server} (no persistence) on a free loopback port, with its files
     * in {@code dir}; for tests that run server-wide commands. Close it to stop it.
     */
    public static Server startServer(Path dir) {
        requireBinaries();
        Node node = startNode(dir, false);
        log("Redis: started a private server on port " + node.port);
        return new Server(dir, node);
    }

    /**
     * Starts a Redis Cluster of three masters (no replicas, no persistence) on loopback ports, with
     * its files in {@code dir}, and returns once every node reports {@code cluster_state:ok}. Close
     * it to stop every node.
     */
    public static Cluster startCluster(Path dir) {
        requireBinaries();
        List<Node> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                nodes.add(startNode(dir, true));
            }
            List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
            nodes.forEach(n -> command.add(LOOPBACK + ":" + n.port));
            command.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            Path output = dir.resolve("cluster-create.log");
            Process create = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).start();
            if (!create.waitFor(CLUSTER_CREATE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                create.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " did not finish within "
                        + CLUSTER_CREATE_TIMEOUT + ":\n" + tail(output));
            }
            if (create.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " exited with " + create.exitValue()
                        + ":\n" + tail(output));
            }
            for (Node node : nodes) {
                await("cluster_state:ok on node " + node.port).atMost(CLUSTER_OK_TIMEOUT).pollDelay(Duration.ZERO)
                        .pollInterval(POLL).until(() -> {
                            node.requireAlive();
                            String info = command(node.port, "CLUSTER INFO");
                            return info != null && info.contains("cluster_state:ok");
                        });
            }
            Cluster cluster = new Cluster(nodes);
            log("Redis: started a cluster of three masters on ports " + cluster.ports());
            return cluster;
        } catch (IOException e) {
            nodes.forEach(Node::stop);
            throw new IllegalStateException("starting a Redis Cluster in " + dir + " failed: " + e, e);
        } catch (InterruptedException e) {
            nodes.forEach(Node::stop);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting a Redis Cluster", e);
        } catch (RuntimeException | Error e) {
            nodes.forEach(Node::stop);
            throw e;
        }
    }

    /**
     * Starts a Redis Sentinel ({@code redis-server --sentinel}) on a free loopback port that monitors
     * {@code master} under {@code masterName}, with its files in {@code dir}, and returns once it names
     * that master to a client ({@code SENTINEL get-master-addr-by-name}). One Sentinel, quorum 1, and
     * no replica: enough for a client that finds its master through Sentinel, not for a failover.
     * Close it to stop it (the master is the caller's to close).
     */
    public static Sentinel startSentinel(Path dir, Server master, String masterName) {
        requireBinaries();
        Node node = startOnFreePort(port -> {
            Path config = dir.resolve("sentinel-" + port + ".conf");
            try {
                // Sentinel rewrites its configuration file as it learns: it must be a file of its own.
                Files.writeString(config, "port " + port + "\nbind " + LOOPBACK + "\ndir " + dir
                        + "\nsentinel monitor " + masterName + " " + LOOPBACK + " " + master.port() + " 1\n",
                        StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new IllegalStateException("cannot write " + config + ": " + e, e);
            }
            String lookup = "SENTINEL get-master-addr-by-name " + masterName;
            return launch(dir, port, List.of("redis-server", config.toString(), "--sentinel"),
                    "to answer " + lookup, () -> "*2".equals(command(port, lookup))); // host and port
        }, false);
        log("Redis: started a Sentinel on port " + node.port + " for master " + masterName + " on port "
                + master.port());
        return new Sentinel(node, masterName);
    }

    /** A running Redis Sentinel; {@link #close()} stops it. */
    public static final class Sentinel implements AutoCloseable {
        private final Node node;
        private final String masterName;

        private Sentinel(Node node, String masterName) {
            this.node = node;
            this.masterName = masterName;
        }

        public int port() {
            return node.port;
        }

        public String masterName() {
            return masterName;
        }

        /** The URI a client connects with: Lettuce asks the Sentinel for the master, then connects to it. */
        public RedisURI uri() {
            return RedisURI.Builder.sentinel(LOOPBACK, node.port, masterName).build();
        }

        @Override
        public void close() {
            node.stop();
        }
    }

    /**
     * A private Redis server; {@link #close()} stops it. {@link #kill()} and {@link #restart()} let
     * a test take it away and bring it back on the same port (empty: there is no persistence).
     */
    public static final class Server implements AutoCloseable {
        private final Path dir;
        private volatile Node node;

        private Server(Path dir, Node node) {
            this.dir = dir;
            this.node = node;
        }

        public int port() {
            return node.port;
        }

        public RedisURI uri() {
            return RedisURI.create(LOOPBACK, node.port);
        }

        /** SIGKILL, as a crash would; returns once the process is gone. */
        public void kill() {
            node.kill();
        }

        /**
         * Starts the server again on the same port, empty, once it was killed or closed; returns once
         * it answers PING.
         */
        public synchronized void restart() {
            Node old = node;
            if (old.process.isAlive()) {
                throw new IllegalStateException("redis-server on port " + old.port + " is still running");
            }
            node = startNodeOn(dir, old.port, false);
            log("Redis: restarted the private server on port " + old.port);
        }

        @Override
        public void close() {
            node.stop();
        }
    }

    /** A running Redis Cluster of three masters; {@link #close()} stops every node. */
    public static final class Cluster implements AutoCloseable {
        private final List<Node> nodes;

        private Cluster(List<Node> nodes) {
            this.nodes = List.copyOf(nodes);
        }

        /** One URI per master; any of them is enough for a client to learn the topology. */
        public List<RedisURI> seedUris() {
            return nodes.stream().map(n -> RedisURI.create(LOOPBACK, n.port)).toList();
        }

        public List<Integer> ports() {
            return nodes.stream().map(n -> n.port).toList();
        }

        @Override
        public void close() {
            nodes.forEach(Node::stop);
        }
    }

    /** One {@code redis-server} child process. */
    private static final class Node {
        final int port;
        final Process process;
        final Path log;

        Node(int port, Process process, Path log) {
            this.port = port;
            this.process = process;
            this.log = log;
        }

        void requireAlive() {
            if (!process.isAlive()) {
                throw new ServerExited("redis-server on port " + port + " exited with "
                        + process.exitValue() + ":\n" + tail(log));
            }
        }

        /** SIGKILL, and wait for the process to be gone. */
        void kill() {
            process.destroyForcibly();
            try {
                if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("redis-server on port " + port + " did not exit within "
                            + STOP_TIMEOUT + " of SIGKILL");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while killing redis-server on port " + port, e);
            } finally {
                RUNNING.remove(process);
            }
        }

        /** SIGTERM, then SIGKILL if it has not exited within the bound. */
        void stop() {
            process.destroy();
            try {
                if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly().waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            } finally {
                RUNNING.remove(process);
            }
        }
    }

    /** A server process ended while it was expected to run. */
    private static final class ServerExited extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        ServerExited(String message) {
            super(message);
        }
    }

    /**
     * Starts {@code redis-server} on a port that was free a moment ago; if another process took it
     * in between, the server exits, and this tries again on another port.
     */
    private static Node startNode(Path dir, boolean clustered) {
        return startOnFreePort(port -> startNodeOn(dir, port, clustered), clustered);
    }

    /** {@code start} on a free port, and on another one if it exits ({@link ServerExited}: the port was taken). */
    private static Node startOnFreePort(IntFunction<Node> start, boolean clustered) {
        ServerExited last = null;
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            try {
                return start.apply(freePort(clustered));
            } catch (ServerExited e) { // most likely another process took the port meanwhile
                last = e;
            }
        }
        throw new IllegalStateException("redis-server did not start in " + START_ATTEMPTS + " attempts", last);
    }

    /** Starts {@code redis-server} on {@code port}; {@link ServerExited} if it exited instead (the port was taken). */
    private static Node startNodeOn(Path dir, int port, boolean clustered) {
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port)));
        if (clustered) {
            command.addAll(List.of("--cluster-enabled", "yes",
                    "--cluster-config-file", dir.resolve("nodes-" + port + ".conf").toString()));
        }
        command.addAll(List.of("--dir", dir.toString(), "--save", "", "--appendonly", "no",
                "--bind", LOOPBACK, "--daemonize", "no"));
        return launch(dir, port, command, "to answer PING", () -> "+PONG".equals(command(port, "PING")));
    }

    /**
     * Runs {@code command} (a server that listens on {@code port}, its output in a log in {@code dir}) and
     * returns once {@code ready}; {@link ServerExited} if it exited instead.
     */
    private static Node launch(Path dir, int port, List<String> command, String readyWhen, BooleanSupplier ready) {
        Path log = dir.resolve("redis-" + port + ".log");
        Node node;
        try {
            Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            RUNNING.add(process);
            node = new Node(port, process, log);
        } catch (IOException e) {
            throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e, e);
        }
        try {
            await("redis-server on port " + port + " " + readyWhen).atMost(START_TIMEOUT)
                    .pollDelay(Duration.ZERO).pollInterval(POLL).until(() -> {
                        node.requireAlive();
                        return ready.getAsBoolean();
                    });
            return node;
        } catch (RuntimeException e) {
            node.stop();
            throw e;
        }
    }

    /** A loopback port free now; for a cluster node its bus port (port + 10000) is free too. */
    private static int freePort(boolean clustered) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; i < 1000; i++) {
            int port = random.nextInt(20_000, 65_536 - (clustered ? CLUSTER_BUS_OFFSET : 0));
            if (bindable(port) && (!clustered || bindable(port + CLUSTER_BUS_OFFSET))) {
                return port;
            }
        }
        throw new IllegalStateException("no free loopback port found for redis-server");
    }

    private static boolean bindable(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(InetAddress.getByName(LOOPBACK), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Sends one inline command and returns the reply's first line, or a bulk reply's text; null if
     * nothing answers on the port. Enough for PING and CLUSTER INFO without a client.
     */
    private static String command(int port, String inline) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(LOOPBACK, port), (int) PROBE_TIMEOUT.toMillis());
            socket.setSoTimeout((int) PROBE_TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write((inline + "\r\n").getBytes(US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            String first = line(in);
            if (!first.startsWith("$")) {
                return first;
            }
            int length = Integer.parseInt(first.substring(1));
            return length < 0 ? null : new String(in.readNBytes(length), StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String line(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) != -1 && b != '\n') {
            if (b != '\r') {
                line.write(b);
            }
        }
        return line.toString(US_ASCII);
    }

    // ---------------------------------------------------------------- helpers

    private static void requireBinaries() {
        List<String> missing = new ArrayList<>();
        for (String binary : List.of("redis-server", "redis-cli")) {
            if (!onPath(binary)) {
                missing.add(binary);
            }
        }
        if (!missing.isEmpty()) {
            String failure = String.join(" and ", missing) + " not found on the PATH; install Redis"
                    + " (e.g. apt-get install redis-server) to run the tests that start their own Redis";
            log(failure + (isCi() ? " (CI=true: failing)" : " (skipping the test)"));
            unavailable(failure);
        }
    }

    private static boolean onPath(String binary) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, binary))) {
                return true;
            }
        }
        return false;
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no output: " + e + ")";
        }
    }
}
