package io.retrysafe.benchmarks.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The load generator against a local JDK HTTP server that stalls, as a service's pause would, or is slow on purpose. */
class HttpLoadTest {

    private static final int STALLED_REQUEST = 5;
    /** How long a stalled request is held, at least. */
    private static final long STALL_MILLIS = 1000;
    /** How long {@code /slow} holds every request, at least. */
    private static final long SLOW_MILLIS = 50;

    private HttpServer server;
    private final AtomicInteger requests = new AtomicInteger();

    @BeforeEach
    void start() throws Exception {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        // The stall under measurement: one request held for a second.
        server.createContext("/payments", exchange ->
                answer(exchange, requests.incrementAndGet() == STALLED_REQUEST ? STALL_MILLIS : 0));
        // The first request held for longer than the warmup and the window of the test that uses it.
        AtomicInteger firstStalls = new AtomicInteger();
        server.createContext("/first-stalls", exchange ->
                answer(exchange, firstStalls.incrementAndGet() == 1 ? 3 * STALL_MILLIS : 0));
        // A service slower than the rate asked of it: every answer takes at least SLOW_MILLIS.
        server.createContext("/slow", exchange -> answer(exchange, SLOW_MILLIS));
        server.setExecutor(Executors.newCachedThreadPool());
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    /** Holds the request for at least {@code millis}, then answers 201. */
    private static void answer(HttpExchange exchange, long millis) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (deadline - System.nanoTime() > 0 && !Thread.currentThread().isInterrupted()) {
            LockSupport.parkNanos(deadline - System.nanoTime());
        }
        byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(201, body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
    }

    @Test
    void aCallerIsSentInTheHeaderTheGatewaySets() {
        HttpLoad.Options options = HttpLoad.Options.parse(new String[] {"--url", url(), "--caller", "alice"});

        assertThat(HttpLoad.request(options, "{}", null).headers().firstValue("X-RetrySafe-Caller")).hasValue("alice");
        assertThat(HttpLoad.request(HttpLoad.Options.parse(new String[] {"--url", url()}), "{}", null).headers()
                .firstValue("X-RetrySafe-Caller")).isEmpty();
    }

    @Test
    void openLoopCountsTheStallForEveryRequestThatWasDueDuringIt() throws Exception {
        // One thread, 40 requests a second for 2 s: the second-long stall of the 5th request delays the
        // ~40 requests due behind it, most of them by more than half a second.
        HttpLoad.Options options = HttpLoad.Options.parse(new String[] {
            "--url", url(), "--mode", "no-key", "--threads", "1", "--rate", "40", "--warmup", "0s",
            "--duration", "2s"});

        HttpLoad.Result result = HttpLoad.run(options, new PrintStream(new ByteArrayOutputStream()));

        assertThat(result.statuses()).containsOnlyKeys(201);
        assertThat(result.requests()).as("every request due in the window, the delayed ones included").isEqualTo(80);
        assertThat(result.unsent()).as("all were sent within the drain").isZero();
        assertThat(result.p90Ms()).as("p90 counts from when each request was due, so the stall shows")
                .isGreaterThanOrEqualTo(500);
        assertThat(result.late()).as("requests sent more than one interval after they were due").isPositive();
        assertThat(result.targetRps()).isEqualTo(40);
    }

    @Test
    void openLoopReportsAServiceThatCannotKeepUp() throws Exception {
        // One thread, 100 requests due a second for 1 s, against a service that takes at least 50 ms per
        // answer: it can give at most 20 a second. The drain ends 2 s after the window, so the thread
        // sends at most 60 of the 100; the rest are unsent, recorded with the wait they had reached.
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        HttpLoad.Options options = HttpLoad.Options.parse(new String[] {
            "--url", url("/slow"), "--mode", "no-key", "--threads", "1", "--rate", "100", "--warmup", "0s",
            "--duration", "1s", "--timeout", "2s"});

        HttpLoad.Result result = HttpLoad.run(options, new PrintStream(log, true, StandardCharsets.UTF_8));

        assertThat(result.requests() + result.errors()).as("every request due in the window is accounted for")
                .isEqualTo(100);
        assertThat(result.unsent()).as("requests still unsent when the drain ended").isPositive();
        assertThat(result.late()).isPositive();
        assertThat(result.achievedRps()).as("answers during the window, not the rate they were due at")
                .isLessThanOrEqualTo(1000.0 / SLOW_MILLIS + 1);
        assertThat(result.rps()).as("the requests measured, due at the rate").isEqualTo(result.requests());
        assertThat(result.p50Ms()).as("the backlog's wait, from each request's due time").isGreaterThanOrEqualTo(1000);
        assertThat(result.overrunSeconds()).as("the drain ran past the window").isGreaterThanOrEqualTo(2);
        assertThat(log.toString(StandardCharsets.UTF_8))
                .contains("the service did not keep up with 100.0 requests per second");
    }

    @Test
    void closedLoopCountsTheStallOnce() throws Exception {
        HttpLoad.Options options = HttpLoad.Options.parse(new String[] {
            "--url", url(), "--mode", "no-key", "--threads", "1", "--warmup", "0s", "--duration", "2s"});

        HttpLoad.Result result = HttpLoad.run(options, new PrintStream(new ByteArrayOutputStream()));

        assertThat(result.maxMs()).as("the stalled request itself").isGreaterThanOrEqualTo(900);
        assertThat(result.late()).isZero();
        assertThat(result.unsent()).isZero();
        assertThat(result.targetRps()).isZero();
    }

    @Test
    void closedLoopSaysWhenAThreadWaitedTheWholeWindow() throws Exception {
        // The 1st request is sent at the start of the 2 s warmup and held for 3 s, past the window's end.
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        HttpLoad.Options options = HttpLoad.Options.parse(new String[] {
            "--url", url("/first-stalls"), "--mode", "no-key", "--threads", "1", "--warmup", "2s",
            "--duration", "500ms"});

        HttpLoad.Result result = HttpLoad.run(options, new PrintStream(log, true, StandardCharsets.UTF_8));

        assertThat(result.requests()).isZero();
        assertThat(result.errors()).isZero();
        assertThat(log.toString(StandardCharsets.UTF_8))
                .contains("1 of 1 thread(s) sent no request during the measured window");
    }

    @Test
    void rateIsChecked() {
        assertThatThrownBy(() -> HttpLoad.Options.parse(new String[] {"--url", url(), "--rate", "0"}))
                .hasMessage("--rate must be above 0 and at most 1000000, but was 0");
        assertThatThrownBy(() -> HttpLoad.Options.parse(new String[] {"--url", url(), "--rate", "fast"}))
                .hasMessage("--rate must be a number of requests per second, but was fast");
    }

    private String url() {
        return url("/payments");
    }

    private String url(String path) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }
}
