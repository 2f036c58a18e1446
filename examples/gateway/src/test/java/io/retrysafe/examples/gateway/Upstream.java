package io.retrysafe.examples.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.Hold;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The example's Python payments service ({@code upstream/payments.py}) as a child process, with its
 * test hooks on, on a port that stays the same across restarts (the gateway's configuration names it).
 */
final class Upstream implements AutoCloseable {
    static final Duration READY_BOUND = Duration.ofSeconds(30);
    /** The module's directory: failsafe runs in it. */
    static final Path SCRIPT = Path.of("upstream", "payments.py").toAbsolutePath();
    private static final Pattern READY = Pattern.compile("payments upstream on 127\\.0\\.0\\.1:(\\d+)");

    private final Path dir;
    private final UpstreamDatabase database;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private ChildProcess process;
    private int port;

    private Upstream(Path dir) {
        this.dir = dir;
        this.database = new UpstreamDatabase(dir.resolve("payments.db"));
    }

    /** The upstream on any free port, its database in {@code dir}. */
    static Upstream start(Path dir) throws IOException, InterruptedException {
        Upstream upstream = new Upstream(dir);
        upstream.launch(0);
        return upstream;
    }

    private void launch(int onPort) throws IOException, InterruptedException {
        process = ChildProcess.start("upstream", dir, List.of("python3", "-u", SCRIPT.toString()),
                Map.of("UPSTREAM_PORT", Integer.toString(onPort), "PAYMENTS_DB", database.file().toString(),
                        "PAYMENTS_TEST_HOOKS", "1"), READY);
        port = process.awaitReady(READY_BOUND);
    }

    int port() {
        return port;
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + port);
    }

    UpstreamDatabase database() {
        return database;
    }

    ChildProcess process() {
        return process;
    }

    /** SIGKILL: a request it is serving gets no answer, and nothing it had not committed is kept. */
    void kill() throws InterruptedException {
        process.kill();
    }

    /** Starts it again on the same port and database (after {@link #kill()} or {@link #stop()}). */
    void restart() throws IOException, InterruptedException {
        if (process.isAlive()) {
            process.close();
        }
        launch(port);
    }

    void stop() throws InterruptedException {
        process.close();
    }

    /** A request marked with {@code X-Test-Hold: name} waits in the upstream, before it books anything. */
    Hold hold(String name) {
        String path = "/test/holds/" + URLEncoder.encode(name, StandardCharsets.UTF_8);
        return new Hold() {
            private boolean released;

            @Override
            public HttpRequest.Builder mark(HttpRequest.Builder request) {
                return request.header("X-Test-Hold", name);
            }

            @Override
            public void awaitArrived() throws Exception {
                HttpResponse<String> arrived = http.send(HttpRequest.newBuilder(uri().resolve(path + "/arrived"))
                        .timeout(Duration.ofSeconds(40)).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(arrived.statusCode()).as("the held request reached the upstream").isEqualTo(200);
            }

            @Override
            public void release() throws Exception {
                if (!released && process.isAlive()) {
                    http.send(HttpRequest.newBuilder(uri().resolve(path + "/release"))
                            .POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(10)).build(),
                            HttpResponse.BodyHandlers.discarding());
                }
                released = true;
            }
        };
    }

    @Override
    public void close() throws InterruptedException {
        process.close();
    }
}
