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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Redis for RetrySafe's own tests.
 *
 * <p>{@link #standaloneUri()}: the shared local Redis, from {@code RETRYSAFE_REDIS_URL} (default
 * {@code redis://127.0.0.1:6379}). Tests on it use a key prefix of their own and never flush
 * anything (no {@code FLUSHALL}, no {@code SCRIPT FLUSH}): others use that server too.
 *
 * <p>{@link #startServer(Path)}, {@link #startCluster(Path)}, {@link #startSentinel(Path, Server, String)} and
 * {@link #startReplicated}: throwaway servers that the test starts as child processes of its JVM on loopback
 * ports, for what must not touch the shared server (server-wide commands), for a real Redis Cluster of three
 * masters, for a Sentinel that names a private server as its master, and for a master with replicas that
 * Sentinels fail over. They need {@code redis-server} and
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
        return startCluster(dir, 0, null);
    }

    /**
     * Starts a Redis Cluster of three masters, each with {@code replicas} replicas (no persistence), on loopback
     * ports, with its files in {@code dir}, and returns once every node reports {@code cluster_state:ok} and every
     * replica streams from its master. A master that has not answered for {@code nodeTimeout} (the server's default
     * when null) is failed over to one of its replicas ({@link Cluster#failMaster()}). Close it to stop every node.
     */
    public static Cluster startCluster(Path dir, int replicas, Duration nodeTimeout) {
        requireBinaries();
        List<Node> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < 3 * (1 + replicas); i++) {
                nodes.add(startOnFreePort(port -> startNodeOn(dir, port, true, nodeTimeout), true));
            }
            List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
            nodes.forEach(n -> command.add(LOOPBACK + ":" + n.port));
            command.addAll(List.of("--cluster-replicas", Integer.toString(replicas), "--cluster-yes"));
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
            if (replicas > 0) {
                await("every replica of the cluster streaming from its master").atMost(CLUSTER_OK_TIMEOUT)
                        .pollDelay(Duration.ZERO).pollInterval(POLL)
                        .until(() -> cluster.replicasStreaming() == 3 * replicas);
            }
            log("Redis: started a cluster of three masters on ports " + cluster.ports()
                    + (replicas == 0 ? "" : ", " + replicas + " replica(s) each"));
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

    /**
     * Starts a replicated Redis under Sentinel, for tests of a failover: a master and {@code replicas} replicas
     * streaming from it (no persistence), and {@code sentinels} Sentinels that agree by majority that the master is
     * down once it has not answered for {@code downAfter}, and promote a replica. Returns once every replica streams
     * and every Sentinel names the master. Close it to stop every process.
     */
    public static Replicated startReplicated(Path dir, int replicas, int sentinels, String masterName,
            Duration downAfter) {
        requireBinaries();
        List<Node> started = new ArrayList<>();
        try {
            Node master = startNode(dir, false);
            started.add(master);
            for (int i = 0; i < replicas; i++) {
                started.add(startOnFreePort(port -> startReplicaOn(dir, port, master.port), false));
            }
            List<Node> watchers = new ArrayList<>();
            for (int i = 0; i < sentinels; i++) {
                Node sentinel = startOnFreePort(port -> startSentinelOn(dir, port, master.port, masterName,
                        sentinels / 2 + 1, downAfter), false);
                watchers.add(sentinel);
                started.add(sentinel);
            }
            Replicated set = new Replicated(dir, masterName, started.subList(0, replicas + 1), watchers,
                    sentinels / 2 + 1, downAfter);
            set.awaitReplicas(master.port);
            log("Redis: started a master on port " + master.port + ", " + replicas + " replica(s) and "
                    + sentinels + " Sentinel(s) on ports " + watchers.stream().map(n -> n.port).toList());
            return set;
        } catch (RuntimeException | Error e) {
            started.forEach(Node::stop);
            throw e;
        }
    }

    /**
     * A master, its replicas and the Sentinels that watch them ({@link #startReplicated}); {@link #failover()} kills
     * the master and waits until the Sentinels have promoted a replica.
     */
    public static final class Replicated implements AutoCloseable {
        private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(60);
        /** How long the Sentinels get to reconfigure the replicas before the wait points them itself. */
        private static final Duration REPOINT_AFTER = Duration.ofSeconds(10);
        private final Path dir;
        private final String masterName;
        private final List<Node> servers;
        private final List<Node> sentinels;
        private final int quorum;
        private final Duration downAfter;

        private Replicated(Path dir, String masterName, List<Node> servers, List<Node> sentinels, int quorum,
                Duration downAfter) {
            this.dir = dir;
            this.masterName = masterName;
            this.servers = new ArrayList<>(servers);
            this.sentinels = List.copyOf(sentinels);
            this.quorum = quorum;
            this.downAfter = downAfter;
        }

        /** A client's URI: every Sentinel, which Lettuce asks for the master on each connect. */
        public RedisURI uri() {
            RedisURI.Builder b = RedisURI.Builder.sentinel(LOOPBACK, sentinels.get(0).port, masterName);
            sentinels.subList(1, sentinels.size()).forEach(s -> b.withSentinel(LOOPBACK, s.port));
            return b.build();
        }

        /** The same as a URI string ({@code redis-sentinel://host:port,host:port#name}), for configuration. */
        public String uriString() {
            StringBuilder b = new StringBuilder("redis-sentinel://");
            for (int i = 0; i < sentinels.size(); i++) {
                b.append(i == 0 ? "" : ",").append(LOOPBACK).append(':').append(sentinels.get(i).port);
            }
            return b.append('#').append(masterName).toString();
        }

        /** The master's port, as the first Sentinel that answers names it. */
        public synchronized int masterPort() {
            for (Node sentinel : sentinels) {
                List<String> address = array(sentinel.port, "SENTINEL get-master-addr-by-name " + masterName);
                if (address.size() == 2) {
                    return Integer.parseInt(address.get(1));
                }
            }
            throw new IllegalStateException("no Sentinel names a master for " + masterName);
        }

        /** The replicas' ports (every server but the master). */
        public synchronized List<Integer> replicaPorts() {
            int master = masterPort();
            return servers.stream().map(n -> n.port).filter(p -> p != master).toList();
        }

        /**
         * The master crashes (SIGKILL) with its replicas {@code behind}: the replicas are frozen (SIGSTOP) and the master
         * drops its links to them ({@code CLIENT KILL TYPE replica}), so that the writes it acknowledges in that time
         * reach none of them (frozen, they cannot reconnect and ask for them), then it is killed and they run on
         * (SIGCONT). Asynchronous replication loses writes exactly so, when a master dies with its replicas behind.
         * Returns the port of the replica the Sentinels promoted, once every Sentinel names it, and once the killed
         * server runs again as its replica (empty, then copied from it) and every replica streams from it.
         */
        public synchronized int failover(Duration behind) throws InterruptedException {
            int old = masterPort();
            Node killed = servers.stream().filter(n -> n.port == old).findFirst().orElseThrow();
            List<Node> replicas = servers.stream().filter(n -> n != killed).toList();
            replicas.forEach(n -> signal(n, "STOP"));
            try {
                if (command(old, "CLIENT KILL TYPE replica") == null) {
                    throw new IllegalStateException("the master on port " + old + " did not drop its replicas");
                }
                Thread.sleep(behind.toMillis()); // the fault itself: the replicas fall behind for this long
                killed.kill();
            } finally {
                replicas.forEach(n -> signal(n, "CONT"));
            }
            int[] promoted = {-1};
            await("the Sentinels promote a replica of " + masterName).atMost(FAILOVER_TIMEOUT)
                    .pollDelay(Duration.ZERO).pollInterval(POLL).until(() -> {
                        for (Node sentinel : sentinels) {
                            List<String> address = array(sentinel.port,
                                    "SENTINEL get-master-addr-by-name " + masterName);
                            if (address.size() != 2 || Integer.parseInt(address.get(1)) == old) {
                                return false;
                            }
                            promoted[0] = Integer.parseInt(address.get(1));
                        }
                        String role = command(promoted[0], "INFO replication");
                        return role != null && role.contains("role:master");
                    });
            // Started again only now, as a replica: an empty server back as master before the promotion would be
            // copied to the replicas and erase everything.
            servers.set(servers.indexOf(killed), startReplicaOn(dir, old, promoted[0]));
            awaitReplicas(promoted[0]);
            log("Redis: failover of " + masterName + " from port " + old + " to port " + promoted[0]);
            return promoted[0];
        }

        /**
         * The master becomes a replica of another server without dropping its clients, and the Sentinels name the
         * new master: a switch-over by hand ({@code REPLICAOF} on both servers, then each Sentinel told to watch
         * the new master). A client still connected to the old master is on a replica now, as one is that
         * connected to the address the Sentinels named a moment before a failover. Returns the new master's port,
         * once every Sentinel names it and every other server streams from it.
         */
        public synchronized int switchOver() {
            int old = masterPort();
            int promoted = servers.stream().map(n -> n.port).filter(p -> p != old).findFirst().orElseThrow();
            require(command(promoted, "REPLICAOF NO ONE"), "REPLICAOF NO ONE on port " + promoted);
            for (Node n : servers) {
                if (n.port != promoted) {
                    require(command(n.port, "REPLICAOF " + LOOPBACK + " " + promoted), "REPLICAOF on port " + n.port);
                }
            }
            for (Node sentinel : sentinels) {
                require(command(sentinel.port, "SENTINEL REMOVE " + masterName), "SENTINEL REMOVE");
                require(command(sentinel.port, "SENTINEL MONITOR " + masterName + " " + LOOPBACK + " " + promoted
                        + " " + quorum), "SENTINEL MONITOR");
                require(command(sentinel.port, "SENTINEL SET " + masterName + " down-after-milliseconds "
                        + downAfter.toMillis()), "SENTINEL SET");
            }
            awaitReplicas(promoted);
            log("Redis: switch-over of " + masterName + " from port " + old + " to port " + promoted);
            return promoted;
        }

        private static void require(String reply, String what) {
            if (reply == null || !reply.startsWith("+OK")) {
                throw new IllegalStateException(what + " answered " + reply);
            }
        }

        /** SIGKILL of every replica: the master goes on alone, with no replica to acknowledge its writes. */
        public synchronized void killReplicas() {
            int master = masterPort();
            servers.stream().filter(n -> n.port != master).forEach(Node::kill);
        }

        /** Starts every replica that is not running again; returns once each streams from the master. */
        public synchronized void restartReplicas() {
            int master = masterPort();
            for (int i = 0; i < servers.size(); i++) {
                Node n = servers.get(i);
                if (n.port != master && !n.process.isAlive()) {
                    servers.set(i, startReplicaOn(dir, n.port, master));
                }
            }
            awaitReplicas(master);
        }

        /**
         * Returns once the master on {@code port} has every other server as a replica streaming from it. A server
         * that, {@link #REPOINT_AFTER} into the wait, still follows another master (or none) is pointed at this one:
         * the Sentinels reconfigure the surviving replicas on their own, but on a loaded machine that can take longer
         * than the wait. One that follows this master already is left alone, as it may be in the middle of its sync.
         */
        private void awaitReplicas(int port) {
            String connected = "connected_slaves:" + (servers.size() - 1);
            long repointAt = System.nanoTime() + REPOINT_AFTER.toNanos();
            boolean[] repointed = {false};
            await("every replica streams from port " + port).atMost(FAILOVER_TIMEOUT).pollDelay(Duration.ZERO)
                    .pollInterval(POLL).until(() -> {
                        String info = command(port, "INFO replication");
                        if (info != null && info.contains(connected)) {
                            return true;
                        }
                        if (!repointed[0] && System.nanoTime() - repointAt >= 0) {
                            repointed[0] = true;
                            repoint(port);
                        }
                        return false;
                    });
        }

        private void repoint(int master) {
            for (Node n : servers) {
                if (n.port == master) {
                    continue;
                }
                String info = command(n.port, "INFO replication");
                if (info != null && !info.contains("master_port:" + master + "\r\n")) {
                    log("Redis: the server on port " + n.port + " follows no master on port " + master + " after "
                            + REPOINT_AFTER.toSeconds() + " s; pointed at it: "
                            + command(n.port, "REPLICAOF " + LOOPBACK + " " + master));
                }
            }
        }

        @Override
        public synchronized void close() {
            sentinels.forEach(Node::stop);
            servers.forEach(Node::stop);
        }
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
            node = startNodeOn(dir, old.port, false, null);
            log("Redis: restarted the private server on port " + old.port);
        }

        @Override
        public void close() {
            node.stop();
        }
    }

    /** A running Redis Cluster of three masters; {@link #close()} stops every node. */
    public static final class Cluster implements AutoCloseable {
        private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(60);
        private final List<Node> nodes;

        private Cluster(List<Node> nodes) {
            this.nodes = List.copyOf(nodes);
        }

        /** One URI per node started; any of them is enough for a client to learn the topology. */
        public List<RedisURI> seedUris() {
            return nodes.stream().map(n -> RedisURI.create(LOOPBACK, n.port)).toList();
        }

        /** Every node started, masters and replicas, dead or alive. */
        public List<Integer> ports() {
            return nodes.stream().map(n -> n.port).toList();
        }

        /** The ports of the nodes alive that serve slots as masters, as the first of them that answers sees it. */
        public List<Integer> masterPorts() {
            for (Node node : nodes) {
                String view = node.process.isAlive() ? command(node.port, "CLUSTER NODES") : null;
                if (view != null && view.contains("master")) {
                    List<Integer> masters = new ArrayList<>();
                    for (String line : view.split("\n")) {
                        String[] f = line.trim().split(" ");
                        // id address flags master-id ping pong epoch link-state slot...
                        if (f.length > 8 && f[2].contains("master") && !f[2].contains("fail")
                                && f[7].equals("connected")) {
                            masters.add(Integer.parseInt(f[1].substring(f[1].lastIndexOf(':') + 1).split("@")[0]));
                        }
                    }
                    return masters;
                }
            }
            throw new IllegalStateException("no node of the cluster answers CLUSTER NODES");
        }

        /** The node on {@code port} crashes (SIGKILL); returns at once. */
        private void kill(int port) {
            node(port).kill();
        }

        /**
         * The node on {@code port} stops answering (SIGSTOP) with its connections open, as a server does in a long
         * pause; {@link #thaw} lets it go on.
         */
        public void freeze(int port) {
            signal(node(port), "STOP");
        }

        public void thaw(int port) {
            signal(node(port), "CONT");
        }

        private Node node(int port) {
            return nodes.stream().filter(n -> n.port == port).findFirst().orElseThrow();
        }

        /**
         * A master crashes (SIGKILL): returns the port of the replica the cluster promoted in its place, once every
         * node alive reports {@code cluster_state:ok} with three masters serving slots.
         */
        public int failMaster() {
            List<Integer> before = masterPorts();
            int old = before.get(0);
            kill(old);
            List<Integer> promoted = new ArrayList<>();
            await("a replica of the master on port " + old + " promoted").atMost(FAILOVER_TIMEOUT)
                    .pollDelay(Duration.ZERO).pollInterval(POLL).until(() -> {
                        List<Integer> now = masterPorts();
                        if (now.size() != before.size() || now.contains(old)) {
                            return false;
                        }
                        for (Node node : nodes) {
                            if (node.process.isAlive()) {
                                String info = command(node.port, "CLUSTER INFO");
                                if (info == null || !info.contains("cluster_state:ok")) {
                                    return false;
                                }
                            }
                        }
                        promoted.clear();
                        now.stream().filter(p -> !before.contains(p)).forEach(promoted::add);
                        return promoted.size() == 1;
                    });
            log("Redis: killed the cluster's master on port " + old + "; the replica on port " + promoted.get(0)
                    + " took its slots");
            return promoted.get(0);
        }

        /**
         * Whether every master alive has a replica and each of its replicas has acknowledged every write the master
         * made (the offset a replica last acknowledged, once a second, is the master's).
         */
        public boolean replicasCaughtUp() {
            for (int port : masterPorts()) {
                String info = command(port, "INFO replication");
                Matcher master = Pattern.compile("master_repl_offset:(\\d+)").matcher(info == null ? "" : info);
                if (!master.find()) {
                    return false;
                }
                Matcher replica = Pattern.compile("slave\\d+:[^\\r\\n]*offset=(\\d+)").matcher(info);
                boolean any = false;
                while (replica.find()) {
                    any = true;
                    if (!replica.group(1).equals(master.group(1))) {
                        return false;
                    }
                }
                if (!any) {
                    return false;
                }
            }
            return true;
        }

        /** How many replicas stream from their master. */
        private int replicasStreaming() {
            int streaming = 0;
            for (Node node : nodes) {
                String info = command(node.port, "INFO replication");
                if (info != null && info.contains("role:slave") && info.contains("master_link_status:up")) {
                    streaming++;
                }
            }
            return streaming;
        }

        @Override
        public void close() {
            nodes.forEach(Node::stop);
        }
    }

    /** Sends {@code signal} ({@code STOP}, {@code CONT}) to the node's process. */
    private static void signal(Node node, String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(node.process.pid())).start();
            if (!kill.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " of redis-server on port " + node.port
                        + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run kill -" + signal + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling redis-server on port " + node.port, e);
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
        return startOnFreePort(port -> startNodeOn(dir, port, clustered, null), clustered);
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
    private static Node startNodeOn(Path dir, int port, boolean clustered, Duration nodeTimeout) {
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port)));
        if (clustered) {
            command.addAll(List.of("--cluster-enabled", "yes",
                    "--cluster-config-file", dir.resolve("nodes-" + port + ".conf").toString()));
        }
        if (nodeTimeout != null) {
            // A replica fails over however long ago it last heard from its master: an idle test cluster's replica
            // otherwise refuses, its data judged too old.
            command.addAll(List.of("--cluster-node-timeout", Long.toString(nodeTimeout.toMillis()),
                    "--cluster-replica-validity-factor", "0"));
        }
        command.addAll(List.of("--dir", dir.toString(), "--save", "", "--appendonly", "no",
                "--bind", LOOPBACK, "--daemonize", "no"));
        return launch(dir, port, command, "to answer PING", () -> "+PONG".equals(command(port, "PING")));
    }

    /** Starts {@code redis-server} on {@code port} as a replica of the server on {@code masterPort}. */
    private static Node startReplicaOn(Path dir, int port, int masterPort) {
        List<String> command = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                "--replicaof", LOOPBACK, Integer.toString(masterPort), "--dir", dir.toString(), "--save", "",
                "--appendonly", "no", "--bind", LOOPBACK, "--daemonize", "no"));
        return launch(dir, port, command, "to stream from port " + masterPort, () -> {
            String info = command(port, "INFO replication");
            return info != null && info.contains("master_link_status:up");
        });
    }

    /** Starts a Sentinel on {@code port} that watches the master on {@code masterPort}. */
    private static Node startSentinelOn(Path dir, int port, int masterPort, String masterName, int quorum,
            Duration downAfter) {
        Path config = dir.resolve("sentinel-" + port + ".conf");
        try {
            // Sentinel rewrites its configuration file as it learns: it must be a file of its own.
            Files.writeString(config, "port " + port + "\nbind " + LOOPBACK + "\ndir " + dir
                    + "\nsentinel monitor " + masterName + " " + LOOPBACK + " " + masterPort + " " + quorum
                    + "\nsentinel down-after-milliseconds " + masterName + " " + downAfter.toMillis()
                    + "\nsentinel failover-timeout " + masterName + " 10000"
                    + "\nsentinel parallel-syncs " + masterName + " 2\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + config + ": " + e, e);
        }
        String lookup = "SENTINEL get-master-addr-by-name " + masterName;
        return launch(dir, port, List.of("redis-server", config.toString(), "--sentinel"), "to answer " + lookup,
                () -> array(port, lookup).size() == 2);
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
        return sent(port, inline, in -> {
            String first = line(in);
            if (!first.startsWith("$")) {
                return first;
            }
            int length = Integer.parseInt(first.substring(1));
            return length < 0 ? null : new String(in.readNBytes(length), StandardCharsets.UTF_8);
        }, null);
    }

    /** What reads a reply. */
    @FunctionalInterface
    private interface Reply<T> {
        T read(InputStream in) throws IOException;
    }

    /** Sends one inline command on a connection of its own and reads its reply; {@code none} if nothing answers. */
    private static <T> T sent(int port, String inline, Reply<T> reply, T none) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(LOOPBACK, port), (int) PROBE_TIMEOUT.toMillis());
            socket.setSoTimeout((int) PROBE_TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write((inline + "\r\n").getBytes(US_ASCII));
            out.flush();
            return reply.read(socket.getInputStream());
        } catch (IOException | RuntimeException e) {
            return none;
        }
    }

    /** Sends one inline command and returns an array reply of bulk strings; empty if there is none. */
    private static List<String> array(int port, String inline) {
        return sent(port, inline, in -> {
            String first = line(in);
            if (!first.startsWith("*") || first.equals("*-1")) {
                return List.of();
            }
            List<String> items = new ArrayList<>();
            for (int i = Integer.parseInt(first.substring(1)); i > 0; i--) {
                int length = Integer.parseInt(line(in).substring(1));
                items.add(new String(in.readNBytes(length), StandardCharsets.UTF_8));
                line(in); // the CRLF after the bulk string
            }
            return items;
        }, List.of());
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
