package io.retrysafe.faults;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The payments service (or the payment provider it calls) as a child JVM on a fixed port, started as an
 * operator would run it (its main class, on this module's test class path), so that it can be killed with
 * SIGKILL and started again where its clients expect it. Each incarnation logs to a file of its own.
 */
final class ServiceNode implements AutoCloseable {
    static final String MAIN_CLASS = "io.retrysafe.examples.paymentsservice.PaymentsServiceApplication";
    private static final Duration START = Duration.ofSeconds(180);

    private final Path dir;
    private final String name;
    private final int port;
    private final String heap;
    private final String mainClass;
    private final List<String> program;
    private final Path readyFile;
    private volatile Process process;
    private int incarnation;

    /** The payments service on {@code port}, with {@code args} besides its port and ready file. */
    ServiceNode(Path dir, int port, List<String> args) {
        this(dir, "service", port, args);
    }

    /** An instance of the payments service, named so in its logs, one of several on one database. */
    ServiceNode(Path dir, String name, int port, List<String> args) {
        this(dir, name, port, "-Xmx512m", MAIN_CLASS, readyFile -> {
            List<String> program = new ArrayList<>(List.of("--server.port=" + port,
                    "--payments.ready-file=" + readyFile, "--spring.main.banner-mode=off"));
            program.addAll(args);
            return program;
        });
    }

    /** The payment provider ({@link PaymentProvider#main}) on {@code port}: a JVM of its own, outliving the service. */
    static ServiceNode provider(Path dir, int port) {
        return new ServiceNode(dir, "provider", port, "-Xmx128m", PaymentProvider.class.getName(),
                readyFile -> List.of(Integer.toString(port), readyFile.toString()));
    }

    /** @param program the main class's arguments, given the file it writes its port to once it serves */
    private ServiceNode(Path dir, String name, int port, String heap, String mainClass,
            Function<Path, List<String>> program) {
        this.dir = dir;
        this.name = name;
        this.port = port;
        this.heap = heap;
        this.mainClass = mainClass;
        this.readyFile = dir.resolve(name + ".port");
        this.program = List.copyOf(program.apply(readyFile));
    }

    int port() {
        return port;
    }

    String name() {
        return name;
    }

    String url() {
        return "http://127.0.0.1:" + port;
    }

    long pid() {
        return process.pid();
    }

    /** Starts an incarnation and waits until it serves; an incarnation that dies while starting is started again. */
    synchronized void start() throws IOException, InterruptedException {
        AssertionError last = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            incarnation++;
            Files.deleteIfExists(readyFile);
            Path log = dir.resolve(name + "-" + incarnation + ".log");
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:TieredStopAtLevel=1", heap, "-XX:+UseSerialGC",
                    "-cp", System.getProperty("java.class.path"), mainClass));
            command.addAll(program);
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            builder.environment().remove("RETRYSAFE_JDBC_URL");
            builder.environment().remove("RETRYSAFE_FAST_FILTER");
            process = builder.start();
            try {
                awaitReady(log);
                return;
            } catch (AssertionError e) {
                last = e;
                process.destroyForcibly().waitFor();
            }
        }
        throw last;
    }

    private void awaitReady(Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + START.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.exists(readyFile)) {
                int served = Integer.parseInt(Files.readString(readyFile, StandardCharsets.US_ASCII).strip());
                if (served != port) {
                    throw new AssertionError("the " + name + " serves port " + served + ", not " + port);
                }
                return;
            }
            if (process.waitFor(100, TimeUnit.MILLISECONDS)) {
                throw new AssertionError("the " + name + " exited with " + process.exitValue()
                        + " before it was ready:\n" + tail(log));
            }
        }
        throw new AssertionError("the " + name + " was not ready within " + START + ":\n" + tail(log));
    }

    /** SIGKILL: no shutdown hook, no rollback by the service, its connections cut as they are. */
    synchronized void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    /** SIGSTOP: the JVM frozen as a long GC pause or a suspended VM freezes it; its sockets and sessions stay open. */
    synchronized void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT: the frozen JVM runs on from where it stopped, unaware of the time that passed. */
    synchronized void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + name + " " + process.pid() + " exited with " + kill.exitValue());
        }
    }

    /**
     * SIGTERM, as an orchestrator stops an instance: the service shuts down gracefully (requests in flight finish)
     * within {@code bound}; returns its exit status.
     */
    synchronized int terminate(Duration bound) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the " + name + " did not stop within " + bound + " of SIGTERM");
        }
        return process.exitValue();
    }

    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public synchronized void close() throws InterruptedException {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        p.destroy();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
        }
    }
}
