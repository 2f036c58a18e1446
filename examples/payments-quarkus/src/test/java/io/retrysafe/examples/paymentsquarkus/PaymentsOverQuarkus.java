package io.retrysafe.examples.paymentsquarkus;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.TcpProxy;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The service on Quarkus REST behind the extension, over the test PostgreSQL, as a client sees it: the conformance
 * suite every stack passes, and what a hostile or broken client sends, and the store out of reach. Each mode's
 * test extends it.
 */
abstract class PaymentsOverQuarkus extends HttpConformance {
    /** How long a client retries after the store is reachable again, for the pool to replace what the cut broke. */
    private static final Duration STORE_BACK_BOUND = Duration.ofSeconds(30);

    @PaymentsDatabaseResource.Proxy
    TcpProxy proxy;

    private final QuarkusTarget target = new QuarkusTarget();

    @Override
    protected ConformanceTarget target() {
        return target;
    }

    private HttpResponse<String> pay(String key, String body) throws Exception {
        return client().send(client().postPayment(target.firstUser(), key, body));
    }

    private static void assertProblem(HttpResponse<String> response, int status, String type) {
        assertThat(response.statusCode()).as("status of %s", response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/" + type + "\"", "\"status\":" + status);
    }

    /** A request as raw bytes, as alice: HTTP clients refuse to send some of what an attacker sends. */
    private RawHttp.Response raw(String key, byte[] body) throws Exception {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Authorization", target.firstUser().authorization());
        headers.put("Content-Type", "application/json");
        headers.put("Idempotency-Key", key);
        return RawHttp.exchange(target.baseUri().getPort(), RawHttp.request("POST", "/payments", headers, body));
    }

    @Test
    void aKeyOverTheMaximumLengthIsRefusedAndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        HttpResponse<String> refused = pay("k".repeat(256), payment(account, 100));

        assertProblem(refused, 400, "invalid-key");
        assertThat(refused.body()).contains("\"rule\":\"too_long\"");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        // "café": é goes out as the one byte 0xE9.
        RawHttp.Response response = raw("caf\u00e9", payment(account, 100).getBytes(StandardCharsets.UTF_8));

        assertThat(response.status()).as(response.toString()).isEqualTo(400);
        assertThat(response.text()).contains("\"type\":\"/problems/invalid-key\"", "\"rule\":\"not_printable_ascii\"");
        assertThat(target.effects(account)).isZero();
    }

    /** Vert.x refuses a control character in a header itself; either way nothing runs and nothing is stored. */
    @Test
    void aKeyWithAControlCharacterRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        RawHttp.Response response = raw("abc\u0001def", payment(account, 100).getBytes(StandardCharsets.UTF_8));

        assertThat(response.status()).as(response.toString()).isEqualTo(400);
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aChunkedBodyOverTheBoundIs413AndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);
        byte[] body = (payment(account, 100) + " ".repeat(QuarkusTarget.MAX_REQUEST_BYTES))
                .getBytes(StandardCharsets.UTF_8);

        // No Content-Length: the filter finds the body too long only as it reads it.
        HttpResponse<String> refused = client().send(client().request(target.firstUser(), "/payments")
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))));

        assertProblem(refused, 413, "request-too-large");
        assertThat(target.effects(account)).isZero();
    }

    /**
     * Megabytes over the bound, its length declared: refused before it reaches the resource, as a problem. (A body over
     * Vert.x's own limit, {@code quarkus.http.limits.max-body-size}, is refused by Vert.x, which closes the connection.)
     */
    @Test
    void aHugeBodyIs413AndRunsNothing() throws Exception {
        String account = target.newAccount(10_000);

        HttpResponse<String> refused = pay(UUID.randomUUID().toString(), payment(account, 100)
                + " ".repeat(5 * 1024 * 1024));

        assertProblem(refused, 413, "request-too-large");
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void aResourceThatThrowsIsRolledBackAndItsKeyReleased() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();
        HttpRequest.Builder failing = client().request(target.firstUser(), "/failures")
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(payment(account, 100)));

        HttpResponse<String> failed = client().send(failing);
        HttpResponse<String> retry = client().send(failing);

        assertThat(failed.statusCode()).isEqualTo(500);
        // Released, not in progress (409) nor stored: the retry runs the resource again, and fails again.
        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isZero();
    }

    @Test
    void theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        proxy.cut();
        HttpResponse<String> down;
        try {
            down = pay(key, payment(account, 100));
        } finally {
            proxy.restore();
        }
        // As a client would: the same request again after each 503's Retry-After, until the store answers
        // (the pool may first hand out a connection the cut broke).
        HttpResponse<String> back;
        long giveUp = System.nanoTime() + STORE_BACK_BOUND.toNanos();
        do {
            back = pay(key, payment(account, 100));
            if (back.statusCode() == 503 && System.nanoTime() < giveUp) {
                Thread.sleep(1000L * Long.parseLong(back.headers().firstValue("Retry-After").orElse("1")));
            }
        } while (back.statusCode() == 503 && System.nanoTime() < giveUp);

        assertProblem(down, 503, "store-unavailable");
        assertThat(down.headers().firstValue("Retry-After")).isPresent();
        assertThat(back.statusCode()).as(back.body()).isEqualTo(201);
        assertThat(back.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isEqualTo(1);
    }
}
