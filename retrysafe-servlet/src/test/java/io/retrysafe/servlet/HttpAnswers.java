package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A client of the filter: a JSON POST with a key on behalf of a user (scoped by {@code X-User}), and
 * what it checks of the answers: a problem of a type, or a replay of an earlier answer.
 */
final class HttpAnswers {
    private static final Pattern TYPE = Pattern.compile("\"type\":\"([^\"]*)\"");
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private HttpAnswers() {
    }

    static HttpRequest.Builder post(URI uri, String user, String idempotencyKey, String json) {
        return HttpRequest.newBuilder(uri).header("Content-Type", "application/json").header("X-User", user)
                .header(HttpIdempotency.HEADER, idempotencyKey).POST(BodyPublishers.ofString(json));
    }

    static HttpResponse<byte[]> send(HttpRequest.Builder request) throws IOException, InterruptedException {
        return HTTP.send(request.timeout(Duration.ofSeconds(60)).build(), BodyHandlers.ofByteArray());
    }

    static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), UTF_8);
    }

    static void assertProblem(HttpResponse<byte[]> r, int status, String type) {
        assertThat(r.statusCode()).as("status of %s", text(r)).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        Matcher m = TYPE.matcher(text(r));
        assertThat(m.find() ? m.group(1) : null).isEqualTo(type);
        assertThat(r.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).isEmpty();
    }

    static void assertReplayOf(HttpResponse<byte[]> retry, HttpResponse<byte[]> original) {
        assertThat(retry.statusCode()).as("status of %s", text(retry)).isEqualTo(original.statusCode());
        assertThat(retry.headers().firstValue(RetrySafeFilter.REPLAYED_HEADER)).hasValue("true");
        assertThat(retry.body()).isEqualTo(original.body());
        assertThat(retry.headers().firstValue("Content-Type")).isEqualTo(original.headers().firstValue("Content-Type"));
        assertThat(retry.headers().firstValue("Location")).isEqualTo(original.headers().firstValue("Location"));
    }
}
