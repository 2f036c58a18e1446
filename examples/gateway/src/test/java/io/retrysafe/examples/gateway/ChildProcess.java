package io.retrysafe.examples.gateway;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A process of the example (the Python upstream, the gateway) as an operator runs it: its output in a
 * log file that failures quote, ready once it says on which port it listens.
 */
final class ChildProcess implements AutoCloseable {
    private static final Duration EXIT_BOUND = Duration.ofSeconds(15);
    private static final int SIGKILL_EXIT_VALUE = 128 + 9;

    private final String name;
    private final Process process;
    private final Path log;
    private final Pattern ready;
    private final long logStart;

    private ChildProcess(String name, Process process, Path log, long logStart, Pattern ready) {
        this.name = name;
        this.process = process;
        this.log = log;
        this.logStart = logStart;
        this.ready = ready;
    }

    /**
     * Starts {@code command} in {@code dir} with these variables added to the environment.
     *
     * @param ready the line the process prints once it listens, its port the pattern's first group
     */
    static ChildProcess start(String name, Path dir, List<String> command, Map<String, String> env, Pattern ready)
            throws IOException {
        Path log = dir.resolve(name + ".log");
        long logStart = Files.exists(log) ? Files.size(log) : 0; // a restart appends to the same log
        ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().putAll(env);
        return new ChildProcess(name, builder.start(), log, logStart, ready);
    }

    /** The port, once the process is ready; fails with its log if it exits first or takes too long. */
    int awaitReady(Duration bound) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        while (System.nanoTime() < deadline) {
            byte[] all = Files.readAllBytes(log);
            Matcher m = ready.matcher(new String(all, (int) logStart, all.length - (int) logStart, StandardCharsets.UTF_8));
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited with " + process.exitValue() + " before it was ready:\n" + log());
            }
            Thread.sleep(50);
        }
        throw new AssertionError(name + " was not ready within " + bound + ":\n" + log());
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** SIGKILL: no shutdown hook, nothing flushed; the kernel closes its sockets. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError(name + " (" + process.pid() + ") is still alive " + EXIT_BOUND + " after SIGKILL");
        }
        if (process.exitValue() != SIGKILL_EXIT_VALUE) {
            throw new AssertionError(name + " exited with " + process.exitValue() + " before it was killed:\n" + log());
        }
    }

    String log() {
        try {
            String text = Files.readString(log, StandardCharsets.UTF_8);
            return text.length() > 20_000 ? "…" + text.substring(text.length() - 20_000) : text;
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /** SIGTERM, then SIGKILL if it is still there after a bound. */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS);
            }
        }
    }
}
