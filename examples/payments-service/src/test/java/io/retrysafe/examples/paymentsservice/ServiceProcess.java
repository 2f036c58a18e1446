package io.retrysafe.examples.paymentsservice;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The service as a child JVM, started from the test class path by its main class, as an operator
 * would run it. Output goes to a log file that failures quote.
 */
final class ServiceProcess implements AutoCloseable {
    private final Process process;
    private final Path log;
    private final Path readyFile;

    private ServiceProcess(Process process, Path log, Path readyFile) {
        this.process = process;
        this.log = log;
        this.readyFile = readyFile;
    }

    /**
     * @param env variables to set, or to remove when mapped to null
     * @param args the service's arguments, e.g. {@code --spring.datasource.url=…}
     */
    static ServiceProcess start(Path dir, String name, Map<String, String> env, String... args) throws IOException {
        Path readyFile = dir.resolve(name + ".port");
        Path log = dir.resolve(name + ".log");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                PaymentsServiceApplication.class.getName(), "--server.port=0", "--payments.ready-file=" + readyFile,
                "--spring.main.banner-mode=off"));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        env.forEach((k, v) -> {
            if (v == null) {
                builder.environment().remove(k);
            } else {
                builder.environment().put(k, v);
            }
        });
        return new ServiceProcess(builder.start(), log, readyFile);
    }

    /** The HTTP port, once the service is ready; fails with its log if it exits first or takes too long. */
    int awaitReady(Duration bound) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        while (System.nanoTime() < deadline) {
            if (Files.exists(readyFile)) {
                return Integer.parseInt(Files.readString(readyFile, StandardCharsets.US_ASCII).strip());
            }
            if (process.waitFor(100, TimeUnit.MILLISECONDS)) {
                throw new AssertionError("the service exited with " + process.exitValue() + " before it was ready:\n"
                        + log());
            }
        }
        throw new AssertionError("the service was not ready within " + bound + ":\n" + log());
    }

    /** Its exit status, waiting at most {@code bound}. */
    int awaitExit(Duration bound) throws InterruptedException {
        if (!process.waitFor(bound.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the service was still running after " + bound + ":\n" + log());
        }
        return process.exitValue();
    }

    /** SIGKILL: no shutdown hook, no rollback by the service, connections cut as they are. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    String log() {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** SIGTERM, a graceful stop; SIGKILL if that takes over 30 s. */
    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
