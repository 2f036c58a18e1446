package io.retrysafe.examples.paymentstesting;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.testservices.RawHttp;
import io.retrysafe.testservices.TcpProxy;
import java.io.ByteArrayInputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What a hostile or broken client sends to a payments service, and the store cut off under it, with what each must
 * get: cases beyond the conformance suite that the Jakarta REST stacks' tests share. Each runs against a target and
 * makes its own account.
 */
public final class HostileClients {
    /** How long a client retries after the store is reachable again, for the pool to replace what the cut broke. */
    private static final Duration STORE_BACK_BOUND = Duration.ofSeconds(30);

    private HostileClients() {
    }

    public static void assertProblem(HttpResponse<String> response, int status, String type) {
        assertThat(response.statusCode()).as("status of %s", response.body()).isEqualTo(status);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/" + type + "\"", "\"status\":" + status);
    }

    public static void assertProblem(RawHttp.Response response, int status, String type) {
        assertThat(response.status()).as(response.toString()).isEqualTo(status);
        assertThat(response.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(response.text()).contains("\"type\":\"/problems/" + type + "\"");
    }

    /** A POST as raw bytes, as the first user: HTTP clients refuse to send some of what an attacker sends. */
    public static RawHttp.Response raw(ConformanceTarget target, String path, String key, String contentType,
            String body) throws Exception {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Authorization", target.firstUser().authorization());
        headers.put("Content-Type", contentType);
        if (key != null) {
            headers.put("Idempotency-Key", key);
        }
        return RawHttp.exchange(target.baseUri().getPort(), RawHttp.request("POST", path, headers,
                body.getBytes(StandardCharsets.UTF_8)));
    }

    public static void aKeyWithBytesOutsidePrintableAsciiIsRefusedAndRunsNothing(ConformanceTarget target)
            throws Exception {
        String account = target.newAccount(10_000);

        // "café": é goes out as the one byte 0xE9.
        RawHttp.Response response = raw(target, "/payments", "caf\u00e9", "application/json", payment(account, 100));

        assertProblem(response, 400, "invalid-key");
        assertThat(response.text()).contains("\"rule\":\"not_printable_ascii\"");
        assertThat(target.effects(account)).isZero();
    }

    public static void aKeyOverTheMaximumLengthIsRefusedAndRunsNothing(ConformanceTarget target) throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);

        HttpResponse<String> refused = client.send(client.postPayment(target.firstUser(), "k".repeat(256),
                payment(account, 100)));

        assertProblem(refused, 400, "invalid-key");
        assertThat(refused.body()).contains("\"rule\":\"too_long\"");
        assertThat(target.effects(account)).isZero();
    }

    public static void aChunkedBodyOverTheBoundIs413AndRunsNothing(ConformanceTarget target) throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);
        byte[] body = (payment(account, 100) + " ".repeat((int) target.maxRequestBytes()))
                .getBytes(StandardCharsets.UTF_8);

        // No Content-Length: the filter finds the body too long only as it reads it.
        HttpResponse<String> refused = client.send(client.request(target.firstUser(), "/payments")
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))));

        assertProblem(refused, 413, "request-too-large");
        assertThat(target.effects(account)).isZero();
    }

    /**
     * Spellings a server may dispatch to the resource of {@code /payments}: each is the same protected route, so
     * the same key replays, and no spelling runs the payment a second time or without a key.
     */
    public static void otherSpellingsOfTheProtectedPathNeitherRunAgainNorGoUnprotected(ConformanceTarget target)
            throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();
        HttpResponse<String> first = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);

        for (String spelling : List.of("/p%61yments", "/payments;x=1", "//payments", "/./payments", "/a/../payments",
                "/payments/")) {
            RawHttp.Response retry = raw(target, spelling, key, "application/json", payment(account, 100));
            RawHttp.Response keyless = raw(target, spelling, null, "application/json", payment(account, 100));

            // Not dispatched (404), the first answer replayed, or, where the spelling is another path to the
            // fingerprint (a trailing '/'), refused as another request under the key: never run again.
            if (retry.status() == 201) {
                assertThat(retry.header("Idempotent-Replayed")).as(spelling).isEqualTo("true");
                assertThat(retry.text()).isEqualTo(first.body());
            } else {
                assertThat(retry.status()).as(spelling + ": " + retry).isIn(404, 422);
            }
            assertThat(keyless.status()).as(spelling + ": " + keyless).isIn(400, 404);
        }
        assertThat(target.effects(account)).isEqualTo(1);
    }

    /**
     * {@code POST /transfers}, the payment as a form ({@code account}, {@code amount}), answered {@code 201} with
     * the amount it booked: a form is fingerprinted by its sorted fields, so the same fields in another order replay,
     * other fields are another request, a malformed form is refused, and the fields still reach the resource whole
     * after the filter read the body.
     */
    public static void aFormIsFingerprintedByItsFieldsAndReachesTheResourceWhole(ConformanceTarget target)
            throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> first = transfer(target, key, "account=" + account + "&amount=5");
        HttpResponse<String> reordered = transfer(target, key, "amount=5&account=" + account);
        HttpResponse<String> other = transfer(target, key, "account=" + account + "&amount=6");
        HttpResponse<String> malformed = transfer(target, UUID.randomUUID().toString(), "account=%zz&amount=5");

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(first.body()).contains("\"amount\":5");
        assertThat(reordered.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(reordered.body()).isEqualTo(first.body());
        assertProblem(other, 422, "key-reused");
        assertProblem(malformed, 400, "malformed-form");
        assertThat(target.effects(account)).isEqualTo(1);
    }

    private static HttpResponse<String> transfer(ConformanceTarget target, String key, String form) throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        return client.send(client.request(target.firstUser(), "/transfers").header("Idempotency-Key", key)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)));
    }

    /**
     * {@code POST path} of a payment of {@code amount}, to a resource that writes it and then throws: {@code 500},
     * nothing of it committed, and the key released (not in progress, not stored), so a retry runs it again.
     */
    public static void aResourceThatThrowsIsRolledBackAndItsKeyReleased(ConformanceTarget target, String path,
            long amount) throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);
        HttpRequest.Builder failing = client.request(target.firstUser(), path)
                .header("Content-Type", "application/json").header("Idempotency-Key", UUID.randomUUID().toString())
                .POST(HttpRequest.BodyPublishers.ofString(payment(account, amount)));

        HttpResponse<String> failed = client.send(failing);
        HttpResponse<String> retry = client.send(failing);

        assertThat(failed.statusCode()).isEqualTo(500);
        // Released, not in progress (409) nor stored: the retry runs the resource again, and fails again.
        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isZero();
    }

    /**
     * The store behind {@code proxy} cut off: a payment gets {@code 503} and does not run; once the store is back
     * the same key, retried as {@code Retry-After} says, runs it once.
     */
    public static void theStoreOutOfReachIs503AndTheSameKeyRunsOnceItIsBack(ConformanceTarget target,
            TcpProxy proxy) throws Exception {
        PaymentsClient client = new PaymentsClient(target);
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        proxy.cut();
        HttpResponse<String> down;
        try {
            down = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
        } finally {
            proxy.restore();
        }
        // As a client would: the same request again after each 503's Retry-After, until the store answers
        // (the pool may first hand out a connection the cut broke).
        HttpResponse<String> back;
        long giveUp = System.nanoTime() + STORE_BACK_BOUND.toNanos();
        do {
            back = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
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
