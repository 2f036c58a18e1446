package io.retrysafe.gateway;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.regex.MatchResult;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;

/** A client of a gateway on a port: requests as the tests send them, and what they assert of problems. */
final class GatewayHttp {
    private static final Pattern STATUS_LINE = Pattern.compile("HTTP/1\\.1 \\d{3}[^\\r\\n]*");
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private final int port;

    GatewayHttp(int port) {
        this.port = port;
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    /** A JSON POST; {@code authorization} and {@code key} are left out when null. */
    HttpRequest.Builder post(String path, String authorization, String key, String json) {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(json));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return b;
    }

    HttpResponse<String> send(HttpRequest.Builder request) throws IOException, InterruptedException {
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Sends {@code request} on a connection of its own, for a test that pauses about as long as the gateway's idle
     * timeout: a pooled connection idle that long may be closed by the gateway just as the request goes out on it,
     * and a client does not resend a POST it may have delivered.
     */
    HttpResponse<String> sendOnNewConnection(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpClient own = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
        return own.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    java.util.concurrent.CompletableFuture<HttpResponse<String>> sendAsync(HttpRequest.Builder request) {
        return HTTP.sendAsync(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * The answer to {@code other}, sent while {@code held} requests wait at {@code upstream}: each made by
     * {@code request} from {@code path} with the query that holds it and its index, sent at once, and held until 64
     * have reached the upstream (the gateway's connections to it; the rest queue in the gateway). Then they are let
     * go, and each must be answered {@code 201}. More requests than the gateway has threads (256) leave it none for
     * {@code other} if each holds one while it waits.
     */
    HttpResponse<String> whileHeld(TestUpstream upstream, String path, int held,
            BiFunction<String, Integer, HttpRequest.Builder> request, HttpRequest.Builder other) throws Exception {
        String block = UUID.randomUUID().toString();
        int before = upstream.callsOn(path);
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        HttpResponse<String> answer;
        try {
            for (int i = 0; i < held; i++) {
                answers.add(sendAsync(request.apply(path + "?block=" + block, i)));
            }
            Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> upstream.callsOn(path) >= before + 64);
            answer = send(other.timeout(Duration.ofSeconds(10)));
        } finally {
            upstream.release(block);
        }
        for (CompletableFuture<HttpResponse<String>> waited : answers) {
            assertThat(waited.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
        }
        return answer;
    }

    HttpResponse<byte[]> sendForBytes(HttpRequest.Builder request) throws IOException, InterruptedException {
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpResponse<java.io.InputStream> sendForStream(HttpRequest.Builder request) throws IOException, InterruptedException {
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /**
     * Sends {@code request} as it is (ISO-8859-1) on a connection of its own and returns all the gateway answers
     * until it closes the connection: for what an HTTP client would refuse to send (a control character in a
     * header, a path it would normalise).
     */
    static String raw(int port, String request) throws IOException {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            socket.getOutputStream().flush();
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }

    /** The status lines of the answers {@link #raw} returned, in order. */
    static List<String> statusLines(String answers) {
        return STATUS_LINE.matcher(answers).results().map(MatchResult::group).toList();
    }

    static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(UTF_8));
    }

    static void assertProblem(HttpResponse<String> r, int status, String type) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(r.body()).contains("\"type\":\"" + type + "\"");
    }
}
