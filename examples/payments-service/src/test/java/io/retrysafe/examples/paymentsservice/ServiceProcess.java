package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The service (or the payment provider it calls) as a child JVM, started from the test class path by its main class, as an operator
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
        return start(dir, name, env, List.of(), System.getProperty("java.class.path"), List.of(), args);
    }

    /**
     * @param launcher the command the JVM is started through, e.g. one that changes the user; empty for none
     * @param classPath the service's class path
     * @param jvmOptions options of the JVM, e.g. {@code -Dspring.aot.enabled=true}
     */
    static ServiceProcess start(Path dir, String name, Map<String, String> env, List<String> launcher, String classPath,
            List<String> jvmOptions, String... args) throws IOException {
        Path readyFile = dir.resolve(name + ".port");
        List<String> program = new ArrayList<>(List.of(PaymentsServiceApplication.class.getName(), "--server.port=0",
                "--payments.ready-file=" + readyFile, "--spring.main.banner-mode=off"));
        program.addAll(List.of(args));
        return launch(dir, name, env, launcher, classPath, jvmOptions, program, readyFile);
    }

    /**
     * The payment provider ({@link PaymentProvider#main}) as a child JVM of its own, on a free port: its charges
     * outlive every service the test kills.
     */
    static ServiceProcess provider(Path dir, String name) throws IOException {
        Path readyFile = dir.resolve(name + ".port");
        return launch(dir, name, Map.of(), List.of(), System.getProperty("java.class.path"), List.of("-Xmx128m"),
                List.of(PaymentProvider.class.getName(), "0", readyFile.toString()), readyFile);
    }

    private static ServiceProcess launch(Path dir, String name, Map<String, String> env, List<String> launcher,
            String classPath, List<String> jvmOptions, List<String> program, Path readyFile) throws IOException {
        Path log = dir.resolve(name + ".log");
        List<String> command = new ArrayList<>(launcher);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-Xmx512m"));
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", classPath));
        command.addAll(program);
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile());
        env.forEach((k, v) -> {
            if (v == null) {
                builder.environment().remove(k);
            } else {
                builder.environment().put(k, v);
            }
        });
        return new ServiceProcess(builder.start(), log, readyFile);
    }

    /** {@code POST /payments} of {@code amount} cents from {@code account} as alice, under {@code key}. */
    static HttpRequest payment(int port, String key, String account, long amount) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .timeout(Duration.ofSeconds(60))
                .header("Authorization", ServiceITSupport.basic(ServiceITSupport.ALICE))
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(ServiceITSupport.payment(account, amount))).build();
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
