package io.retrysafe.testservices;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A test's child JVM on the test's class path. It waits for one line starting with a given word on
 * the child's stdout; stderr goes to a file, shown when that line does not come.
 */
public final class ChildJvm implements AutoCloseable {
    private static final Duration EXIT_BOUND = Duration.ofSeconds(10);
    private static final int SIGKILL_EXIT_VALUE = 128 + 9;

    private final Process process;
    private final Path stderr;
    private final String word;
    private final CompletableFuture<String> line = new CompletableFuture<>();
    private final StringBuffer otherOutput = new StringBuffer();

    private ChildJvm(Process process, Path stderr, String word) {
        this.process = process;
        this.stderr = stderr;
        this.word = word;
    }

    /** Starts {@code main} with {@code args}, waiting for a stdout line that starts with {@code word}. */
    public static ChildJvm start(Class<?> main, String word, String... args) throws IOException {
        return launch(List.of("-cp", System.getProperty("java.class.path"), main.getName()), word, args);
    }

    /**
     * Starts an executable jar (a packaged application, such as Quarkus's {@code quarkus-run.jar}) with
     * {@code options} for the JVM (system properties), waiting for a stdout line that starts with {@code word}.
     */
    public static ChildJvm startJar(Path jar, List<String> options, String word, String... args) throws IOException {
        List<String> program = new ArrayList<>(options);
        program.addAll(List.of("-jar", jar.toString()));
        return launch(program, word, args);
    }

    private static ChildJvm launch(List<String> program, String word, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
                // Start fast on a loaded machine; the child does little work.
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"));
        command.addAll(program);
        command.addAll(List.of(args));
        Path stderr = Files.createTempFile("retrysafe-child-", ".err");
        Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
        ChildJvm child = new ChildJvm(process, stderr, word);
        Thread reader = new Thread(child::readStdout, "child-stdout-" + process.pid());
        reader.setDaemon(true);
        reader.start();
        return child;
    }

    /**
     * For a child's {@code main}: halts the child as soon as its stdin closes, which is when the test
     * JVM that started it died, so no child outlives its test.
     */
    public static void haltWhenParentDies() {
        Thread watchdog = new Thread(() -> {
            try {
                java.io.InputStream in = System.in;
                while (in.read() != -1) {
                    // the parent never writes; only end of stream matters
                }
            } catch (IOException ignored) {
                // a broken pipe means the same as end of stream
            }
            Runtime.getRuntime().halt(3);
        }, "child-stdin-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    private void readStdout() {
        try (BufferedReader out = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String next;
            while ((next = out.readLine()) != null) {
                if (next.startsWith(word + " ")) {
                    line.complete(next.substring(word.length() + 1));
                } else {
                    otherOutput.append(next).append('\n');
                }
            }
            line.completeExceptionally(new IllegalStateException("the child's stdout ended"));
        } catch (IOException e) {
            line.completeExceptionally(e);
        }
    }

    /** The rest of the awaited line, once the child printed it. */
    public String awaitLine(Duration bound) throws InterruptedException {
        try {
            return line.get(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            if (e instanceof ExecutionException) {
                process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS);
            }
            throw new AssertionError("the child did not print " + word + " within " + bound + " (" + state()
                    + ")\n--- its stdout:\n" + otherOutput + "--- its stderr:\n" + stderr(), e);
        }
    }

    /** SIGKILL: no shutdown hook, no offset commit, no leave-group; the kernel closes its sockets. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the child " + process.pid() + " is still alive " + EXIT_BOUND + " after SIGKILL");
        }
        if (process.exitValue() != SIGKILL_EXIT_VALUE) {
            throw new AssertionError("the child exited with " + process.exitValue() + " before it was killed (SIGKILL: "
                    + SIGKILL_EXIT_VALUE + ")\n--- its stderr:\n" + stderr());
        }
    }

    /** SIGTERM: the child's shutdown hooks run; returns its exit value once it has exited. */
    public int terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the child " + process.pid() + " is still alive " + EXIT_BOUND + " after SIGTERM\n"
                    + "--- its stderr:\n" + stderr());
        }
        return process.exitValue();
    }

    private String state() {
        return process.isAlive() ? "still running, pid " + process.pid() : "exited with " + process.exitValue();
    }

    private String stderr() {
        try {
            String text = Files.readString(stderr, StandardCharsets.UTF_8);
            return text.length() > 20_000 ? "…" + text.substring(text.length() - 20_000) : text;
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    @Override
    public void close() throws IOException {
        try {
            if (process.isAlive()) {
                process.destroyForcibly();
                if (!process.waitFor(EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("child " + process.pid() + " survived SIGKILL for " + EXIT_BOUND);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for child " + process.pid() + " to die", e);
        } finally {
            process.getOutputStream().close();
            Files.deleteIfExists(stderr);
        }
    }
}
