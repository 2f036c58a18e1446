package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What a client checks of the filter's answers: a problem of a type, or a replay of an earlier answer. */
final class HttpAnswers {
    private static final Pattern TYPE = Pattern.compile("\"type\":\"([^\"]*)\"");

    private HttpAnswers() {
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
