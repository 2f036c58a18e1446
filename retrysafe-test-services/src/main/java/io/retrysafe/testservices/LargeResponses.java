package io.retrysafe.testservices;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.UUID;

/**
 * What every HTTP stack's filter must do with a response far larger than the bound held for replay (and than
 * the server's heap): the client gets every byte, the server survives, and a retry is the stored status and
 * headers without the body, the handler not run again.
 */
public final class LargeResponses {
    private LargeResponses() {
    }

    /**
     * Posts to {@code large} as alice ({@code X-User}) under a new key, reads the answer to its end, posts again,
     * and asks {@code GET large} how often the handler ran.
     *
     * @param bytes the body's length the handler writes
     */
    public static void assertServedWholeOnceThenReplayedWithoutBody(HttpClient http, URI large, long bytes)
            throws IOException, InterruptedException {
        String key = UUID.randomUUID().toString();

        HttpResponse<InputStream> first = http.send(post(large, key), BodyHandlers.ofInputStream());
        long received;
        try (InputStream body = first.body()) {
            received = body.transferTo(OutputStream.nullOutputStream());
        }
        HttpResponse<byte[]> retry = http.send(post(large, key), BodyHandlers.ofByteArray());
        HttpResponse<String> runs = http.send(HttpRequest.newBuilder(large).timeout(Duration.ofSeconds(30)).build(),
                BodyHandlers.ofString());

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(received).as("every byte reached the client").isEqualTo(bytes);
        assertThat(runs.statusCode()).as("the server survived").isEqualTo(200);
        assertThat(runs.body()).as("the handler ran once").isEqualTo("1");
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.headers().firstValue("Idempotent-Replay-Body-Omitted")).hasValue(Long.toString(bytes));
        assertThat(retry.body()).isEmpty();
    }

    private static HttpRequest post(URI uri, String key) {
        return HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(2)).header("Idempotency-Key", key)
                .header("X-User", "alice").POST(BodyPublishers.noBody()).build();
    }
}
