package io.retrysafe.conformance;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The black-box behaviour of {@code POST /payments} with an {@code Idempotency-Key}, as a client sees
 * it, the same on every stack: every row of the HTTP table (docs/http.md). A stack's test extends it
 * and says what it runs against ({@link #target()}); it may add cases of its own beside these.
 *
 * <p>Every case makes its own account and counts that account's effects in the service's own
 * database, so cases and repeated runs never see each other's payments.
 */
public abstract class HttpConformance {
    /** Requests of one key sent at once by {@link #concurrentDuplicatesHaveOneEffectAndAgreeOnTheAnswer()}. */
    public static final int CONCURRENT_DUPLICATES = 64;

    private PaymentsClient client;

    /** The service under test; asked for once per test, after the test instance is ready. */
    protected abstract ConformanceTarget target();

    /** A client of {@link #target()}. */
    protected final PaymentsClient client() {
        if (client == null) {
            client = new PaymentsClient(target());
        }
        return client;
    }

    protected static String newKey() {
        return UUID.randomUUID().toString();
    }

    private HttpResponse<String> pay(Credentials user, String key, String body) throws Exception {
        return client().send(client().postPayment(user, key, body));
    }

    private static void assertProblem(HttpResponse<String> response, int status, String type) {
        assertThat(response.statusCode()).as("status of %s", response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/" + type + "\"");
    }

    /** A replay: the first answer again, marked {@code Idempotent-Replayed: true}. */
    private static void assertReplayOf(HttpResponse<String> replay, HttpResponse<String> first) {
        assertThat(replay.statusCode()).isEqualTo(first.statusCode());
        assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(replay.headers().firstValue("Content-Type")).isEqualTo(first.headers().firstValue("Content-Type"));
    }

    @Test
    void aNewKeyRunsThePaymentAnd201sWithItsLocation() throws Exception {
        String account = target().newAccount(10_000);

        HttpResponse<String> created = pay(target().firstUser(), newKey(), payment(account, 100));

        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        assertThat(created.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(created.headers().firstValue("Content-Type")).hasValue("application/json");
        String location = created.headers().firstValue("Location").orElseThrow();
        assertThat(location).matches("/payments/[0-9a-f-]{36}");
        assertThat(created.body()).contains("\"id\":\"" + location.substring("/payments/".length()) + "\"",
                "\"account\":\"" + account + "\"", "\"amount\":100", "\"balance\":9900");
        assertThat(target().effects(account)).isEqualTo(1);
    }

    @Test
    void aRetryIsReplayedIdenticallyAndHasNoSecondEffect() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();

        HttpResponse<String> first = pay(target().firstUser(), key, payment(account, 100));
        HttpResponse<String> retry = pay(target().firstUser(), key, payment(account, 100));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertReplayOf(retry, first);
        assertThat(target().effects(account)).isEqualTo(1);
    }

    @Test
    void aClientReserialisingTheSameIntentIsReplayed() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();
        HttpResponse<String> first = pay(target().firstUser(), key, payment(account, 100));

        // The same JSON value: other member order, other white space.
        HttpResponse<String> retry = pay(target().firstUser(), key,
                "{\n  \"amount\" : 100,\n  \"account\" : \"" + account + "\"\n}");

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertReplayOf(retry, first);
        assertThat(target().effects(account)).isEqualTo(1);
    }

    @Test
    void aDuplicateWhileTheFirstIsInFlightIs409WithRetryAfter() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();
        CompletableFuture<HttpResponse<String>> first;
        try (Hold hold = target().hold(key)) {
            first = client().sendAsync(hold.mark(client().postPayment(target().firstUser(), key, payment(account, 100))));
            hold.awaitArrived(); // key claimed, no effect yet

            HttpResponse<String> duplicate = pay(target().firstUser(), key, payment(account, 100));

            assertProblem(duplicate, 409, "request-in-progress");
            assertThat(duplicate.headers().firstValue("Retry-After"))
                    .hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isPositive());
            assertThat(duplicate.body()).contains("\"status\":409");
            assertThat(target().effects(account)).isZero();
        }
        HttpResponse<String> firstAnswer = first.get(60, TimeUnit.SECONDS);
        assertThat(firstAnswer.statusCode()).as(firstAnswer.body()).isEqualTo(201);
        assertThat(firstAnswer.headers().firstValue("Idempotent-Replayed")).isEmpty();

        HttpResponse<String> retry = pay(target().firstUser(), key, payment(account, 100));
        assertReplayOf(retry, firstAnswer);
        assertThat(target().effects(account)).isEqualTo(1);
    }

    @Test
    void theSameKeyWithAnotherBodyIs422AndHasNoEffect() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();
        HttpResponse<String> first = pay(target().firstUser(), key, payment(account, 100));

        HttpResponse<String> other = pay(target().firstUser(), key, payment(account, 999));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertProblem(other, 422, "key-reused");
        assertThat(target().effects(account)).isEqualTo(1);
    }

    @Test
    void aMissingKeyIs400AndHasNoEffect() throws Exception {
        String account = target().newAccount(10_000);

        HttpResponse<String> refused = pay(target().firstUser(), null, payment(account, 100));

        assertProblem(refused, 400, "missing-key");
        assertThat(target().effects(account)).isZero();
    }

    @Test
    void aMalformedKeyIs400AndHasNoEffect() throws Exception {
        String account = target().newAccount(10_000);

        HttpResponse<String> twoValues = client().send(client()
                .postPayment(target().firstUser(), newKey(), payment(account, 100)).header("Idempotency-Key", newKey()));
        HttpResponse<String> empty = pay(target().firstUser(), "\"\"", payment(account, 100));

        assertProblem(twoValues, 400, "invalid-key");
        assertThat(twoValues.body()).contains("\"rule\":\"multiple_values\"");
        assertProblem(empty, 400, "invalid-key");
        assertThat(target().effects(account)).isZero();
    }

    @Test
    void aBodyOverTheBoundIs413AndHasNoEffect() throws Exception {
        String account = target().newAccount(10_000);
        // A valid payment, padded one byte past the bound.
        String head = "{\"account\":\"" + account + "\",\"amount\":100,\"note\":\"";
        String padded = head + "x".repeat((int) (target().maxRequestBytes() - head.length() - 1)) + "\"}";

        HttpResponse<String> refused = pay(target().firstUser(), newKey(), padded);

        assertProblem(refused, 413, "request-too-large");
        assertThat(target().effects(account)).isZero();
    }

    /**
     * A body declared over the bound is refused before it is read, and the answer says {@code Connection: close}:
     * the client, which sent the head alone, learns that the connection will not take another request, and that the
     * server need not be sent the declared bytes nobody will read. (Whether the server closes at once or waits for
     * the client to is the container's; the answer is the front door's.)
     */
    @Test
    void aDeclaredLengthOverTheBoundIs413WithConnectionClose() throws Exception {
        URI base = target().baseUri();
        String head = "POST /payments HTTP/1.1\r\nHost: " + base.getHost() + "\r\nAuthorization: "
                + target().firstUser().authorization() + "\r\nIdempotency-Key: " + newKey()
                + "\r\nContent-Type: application/json\r\nContent-Length: " + 2 * target().maxRequestBytes()
                + "\r\n\r\n";
        String answer;
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            answer = readAnswer(socket.getInputStream());
        }

        assertThat(answer).startsWith("HTTP/1.1 413 ").containsIgnoringCase("\r\nConnection: close\r\n")
                .contains("\"type\":\"/problems/request-too-large\"");
    }

    /** One HTTP/1.1 answer framed by its {@code Content-Length}: its head and body, as text. */
    private static String readAnswer(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException("the connection closed inside the answer's head: " + head);
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        Matcher length = Pattern.compile("(?i)\r\nContent-Length: *(\\d+)\r\n").matcher(text);
        byte[] body = length.find() ? in.readNBytes(Integer.parseInt(length.group(1))) : new byte[0];
        return text + new String(body, StandardCharsets.UTF_8);
    }

    @Test
    void aBodyThatIsNotJsonIs400() throws Exception {
        HttpResponse<String> refused = pay(target().firstUser(), newKey(), "{\"account\":");

        assertProblem(refused, 400, "malformed-json");
    }

    @Test
    void withoutCredentialsIs401AndHasNoEffect() throws Exception {
        String account = target().newAccount(10_000);

        HttpResponse<String> anonymous = pay(null, newKey(), payment(account, 100));

        assertProblem(anonymous, 401, "unauthenticated");
        // RFC 9110 §15.5.2: a 401 carries a challenge; every target here authenticates with HTTP Basic.
        assertThat(anonymous.headers().allValues("WWW-Authenticate")).singleElement().asString().startsWith("Basic realm=");
        assertThat(target().effects(account)).isZero();
    }

    @Test
    void insufficientFundsIs402AndTheRefusalIsReplayed() throws Exception {
        String account = target().newAccount(50);
        String key = newKey();

        HttpResponse<String> refused = pay(target().firstUser(), key, payment(account, 100));
        long effects = target().effects(account);
        target().setBalance(account, 1_000);
        HttpResponse<String> retry = pay(target().firstUser(), key, payment(account, 100));

        assertProblem(refused, 402, "insufficient-funds");
        assertThat(refused.body()).contains("\"balance\":50");
        // The refusal was the answer to this intent: a retry gets it again, even though the money is there now.
        assertReplayOf(retry, refused);
        assertThat(target().effects(account)).isEqualTo(effects);

        HttpResponse<String> newIntent = pay(target().firstUser(), newKey(), payment(account, 100));
        assertThat(newIntent.statusCode()).as(newIntent.body()).isEqualTo(201);
    }

    @Test
    void aKeyBelongsToItsUser() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();

        HttpResponse<String> first = pay(target().firstUser(), key, payment(account, 100));
        HttpResponse<String> second = pay(target().secondUser(), key, payment(account, 100));

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(second.statusCode()).as(second.body()).isEqualTo(201);
        assertThat(second.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(second.headers().firstValue("Location")).isNotEqualTo(first.headers().firstValue("Location"));
        assertThat(target().effects(account)).isEqualTo(2);
    }

    @Test
    void concurrentDuplicatesHaveOneEffectAndAgreeOnTheAnswer() throws Exception {
        String account = target().newAccount(10_000);
        String key = newKey();
        List<HttpResponse<String>> answers = client().sendAtOnce(CONCURRENT_DUPLICATES,
                () -> client().postPayment(target().firstUser(), key, payment(account, 100)));

        assertThat(target().effects(account)).isEqualTo(1);
        assertThat(answers).allSatisfy(r -> assertThat(r.statusCode()).as(r.body()).isIn(201, 409));
        List<HttpResponse<String>> created = answers.stream().filter(r -> r.statusCode() == 201).toList();
        assertThat(created).isNotEmpty();
        assertThat(created).extracting(HttpResponse::body).containsOnly(created.get(0).body());
        assertThat(created).extracting(r -> r.headers().firstValue("Location"))
                .containsOnly(created.get(0).headers().firstValue("Location"));
        assertThat(created.stream().filter(r -> r.headers().firstValue("Idempotent-Replayed").isEmpty()))
                .as("answers that ran the payment").hasSize(1);
        assertThat(answers.stream().filter(r -> r.statusCode() == 409))
                .allSatisfy(r -> assertThat(r.headers().firstValue("Retry-After")).isPresent());
    }
}
