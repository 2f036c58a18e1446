package io.retrysafe.testservices;

import static io.retrysafe.testservices.SharedService.env;
import static io.retrysafe.testservices.SharedService.isCi;
import static io.retrysafe.testservices.SharedService.log;
import static io.retrysafe.testservices.SharedService.oneLine;
import static io.retrysafe.testservices.SharedService.unavailable;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.core.ConditionTimeoutException;

/**
 * A DynamoDB-compatible server for RetrySafe's own tests: the shared local one from
 * {@code RETRYSAFE_DYNAMODB_URL} (default {@value #DEFAULT_URL}, dynalite's own default port), probed
 * once per JVM with a {@code ListTables} call.
 *
 * <p>When nothing answers there, a private dynalite (in memory) is started as a child process of the
 * JVM on a free loopback port, if it is installed: {@code RETRYSAFE_DYNALITE} (the {@code dynalite}
 * executable), else {@value #OPT_DYNALITE} (where CI installs it), else {@code dynalite} on the
 * {@code PATH}. Without either, the calling test is aborted (reported as skipped, with the reason),
 * unless {@code CI=true}, where the services are mandatory and it fails.
 *
 * <p>Others use the shared server too: a test creates tables with {@link #uniqueTableName(String)}
 * names and never touches a table it did not create.
 */
public final class TestDynamo {

    static final String DEFAULT_URL = "http://127.0.0.1:4567";
    static final String OPT_DYNALITE = "/opt/dynalite/node_modules/.bin/dynalite";

    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration POLL = Duration.ofMillis(50);
    private static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT);

    private static final Object LOCK = new Object();
    // Guarded by LOCK; resolved once per JVM.
    private static String url;
    private static String failure;

    private TestDynamo() {}

    /**
     * The URL of a DynamoDB-compatible server that answered: the shared one, or a private dynalite
     * started for this JVM. If neither, aborts the calling test (skipped, with the reason), or fails it
     * when {@code CI=true}.
     */
    public static String url() {
        String resolved;
        String problem;
        synchronized (LOCK) {
            if (url == null && failure == null) {
                resolve();
            }
            resolved = url;
            problem = failure;
        }
        return resolved != null ? resolved : unavailable(problem);
    }

    /** A table name no other test uses: {@code prefix} plus 12 random hex digits. */
    public static String uniqueTableName(String prefix) {
        if (prefix == null || !prefix.matches("[A-Za-z0-9_.-]{1,64}")) {
            throw new IllegalArgumentException(
                    "prefix must be 1 to 64 letters, digits, '_', '.' or '-', but was " + prefix);
        }
        return prefix + "-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    /**
     * Deletes {@code table} (one the test created) on the server at {@code url}, and fails if the server
     * refuses. For a test with no DynamoDB client of its own, such as one driving a child process.
     */
    public static void deleteTable(String url, String table) {
        HttpResponse<String> response;
        try {
            response = call(URI.create(url), "DeleteTable", "{\"TableName\":\"" + table + "\"}");
        } catch (IOException e) {
            throw new IllegalStateException("DeleteTable " + table + " at " + url + ": " + oneLine(e), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while deleting " + table, e);
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException("DeleteTable " + table + " at " + url + " answered " + response.statusCode()
                    + ": " + response.body());
        }
    }

    /** Null if a DynamoDB-compatible server at {@code configured} answers {@code ListTables}, else a reason. */
    static String probe(String configured) {
        URI uri;
        try {
            uri = URI.create(configured);
        } catch (IllegalArgumentException e) {
            return "invalid URL: " + oneLine(e);
        }
        try {
            HttpResponse<String> response = call(uri, "ListTables", "{\"Limit\":1}");
            if (response.statusCode() != 200 || !response.body().contains("TableNames")) {
                return "ListTables answered " + response.statusCode() + ": " + response.body();
            }
            return null;
        } catch (IOException e) {
            return oneLine(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while probing";
        }
    }

    /** One DynamoDB API call, with a bound on connecting and on the answer. */
    private static HttpResponse<String> call(URI uri, String action, String body)
            throws IOException, InterruptedException {
        HttpClient client = HttpClient.newBuilder().connectTimeout(PROBE_TIMEOUT).build();
        // dynalite and DynamoDB Local check that a request is signed, not the signature.
        String date = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(PROBE_TIMEOUT)
                .header("Content-Type", "application/x-amz-json-1.0")
                .header("X-Amz-Target", "DynamoDB_20120810." + action)
                .header("X-Amz-Date", date)
                .header("Authorization", "AWS4-HMAC-SHA256 Credential=test/" + date.substring(0, 8)
                        + "/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date, Signature=00")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return client.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private static void resolve() {
        String configured = env("RETRYSAFE_DYNAMODB_URL", DEFAULT_URL);
        String problem = probe(configured);
        if (problem == null) {
            log("DynamoDB: using " + configured + " (reachable)");
            url = configured;
            return;
        }
        String dynalite = findDynalite();
        if (dynalite == null) {
            failure = "DynamoDB not reachable at " + configured + ": " + problem + "; and no dynalite to start (set "
                    + "RETRYSAFE_DYNALITE, install it with npm install --prefix /opt/dynalite dynalite@4.0.0, or put "
                    + "it on the PATH), or set RETRYSAFE_DYNAMODB_URL (e.g. " + DEFAULT_URL + ")";
            log(failure + (isCi() ? " (CI=true: failing)" : " (skipping its tests)"));
            return;
        }
        try {
            url = start(dynalite);
        } catch (IOException | RuntimeException e) {
            failure = "DynamoDB not reachable at " + configured + " (" + problem + "), and starting " + dynalite
                    + " failed: " + oneLine(e);
            log(failure + (isCi() ? " (CI=true: failing)" : " (skipping its tests)"));
        }
    }

    private static String findDynalite() {
        String configured = System.getenv("RETRYSAFE_DYNALITE");
        if (configured != null && !configured.isBlank()) {
            return Files.isExecutable(Path.of(configured)) ? configured : null;
        }
        if (Files.isExecutable(Path.of(OPT_DYNALITE))) {
            return OPT_DYNALITE;
        }
        for (String dir : env("PATH", "").split(java.io.File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "dynalite"))) {
                return Path.of(dir, "dynalite").toString();
            }
        }
        return null;
    }

    /** Starts an in-memory dynalite on a free loopback port and waits, with a bound, until it answers. */
    private static String start(String dynalite) throws IOException {
        int port = freePort();
        Path output = Files.createTempFile("retrysafe-dynalite-", ".log");
        Process process = new ProcessBuilder(List.of(dynalite, "--host", "127.0.0.1", "--port", Integer.toString(port)))
                .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly, "retrysafe-test-dynalite-shutdown"));
        String address = "http://127.0.0.1:" + port;
        AtomicReference<String> problem = new AtomicReference<>();
        try {
            await("dynalite at " + address).atMost(START_TIMEOUT).pollDelay(Duration.ZERO).pollInterval(POLL)
                    .until(() -> {
                        if (!process.isAlive()) {
                            throw new IllegalStateException("dynalite exited with " + process.exitValue()
                                    + "; its output: " + Files.readString(output).strip());
                        }
                        problem.set(probe(address));
                        return problem.get() == null;
                    });
        } catch (ConditionTimeoutException e) {
            process.destroyForcibly();
            throw new IllegalStateException("dynalite did not answer within " + START_TIMEOUT + ": " + problem.get());
        }
        log("DynamoDB: started a private dynalite (" + dynalite + ") at " + address);
        return address;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return socket.getLocalPort();
        }
    }
}
