package io.retrysafe.examples.paymentsservice;

import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.examples.paymentsservice.provider.FlatJson;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Optional;

/**
 * The payment provider's API as the checkout calls it, every call under an {@code Idempotency-Key} the
 * provider deduplicates on. What a call can end in: an answer ({@link Charge}, {@link Declined}); a
 * failure the provider reports, after which nothing was done ({@link ProviderUnavailableException}); or no
 * answer in time, after which the charge may exist ({@link OutcomeUnknownException}: the checkout's key stays
 * in progress until its lease ends, and the retry asks again under the same key).
 */
final class ProviderClient {
    private final URI base;
    private final Duration timeout;
    private final HttpClient http;

    ProviderClient(String url, Duration timeout) {
        this.base = URI.create(url.endsWith("/") ? url : url + "/");
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    URI base() {
        return base;
    }

    /** What a charge request ended in: charged, or refused for good. */
    sealed interface ChargeResult {
    }

    record Charge(String id, long amount) implements ChargeResult {
    }

    /** A decline or another permanent refusal (4xx): retrying the same request cannot change it. */
    record Declined(String code, String message) implements ChargeResult {
    }

    /** The provider failed or was unreachable before it did anything: the same request may be sent again. */
    static final class ProviderUnavailableException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ProviderUnavailableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    ChargeResult charge(String card, long amount, String idempotencyKey) throws InterruptedException {
        HttpResponse<String> response = send("charges", idempotencyKey,
                "{\"card\":\"" + card + "\",\"amount\":" + amount + "}");
        int status = response.statusCode();
        if (status == 200 || status == 201) {
            return new Charge(string(response.body(), "id"), number(response.body(), "amount"));
        }
        if (status >= 400 && status < 500 && status != 409 && status != 429) {
            String code = string(response.body(), "error");
            String message = string(response.body(), "message");
            return new Declined(code == null ? "http_" + status : code, message == null ? "" : message);
        }
        throw unavailable("charge", response);
    }

    /** Refunds {@code charge}; the refund's id. */
    String refund(String charge, String idempotencyKey) throws InterruptedException {
        HttpResponse<String> response = send("refunds", idempotencyKey, "{\"charge\":\"" + charge + "\"}");
        if (response.statusCode() == 201 || response.statusCode() == 200) {
            return string(response.body(), "id");
        }
        if (response.statusCode() == 400 && "charge_already_refunded".equals(string(response.body(), "error"))) {
            return "already-refunded";
        }
        throw unavailable("refund", response);
    }

    /** The charge made under {@code idempotencyKey}, if one was; fails while a request with it is in flight. */
    Optional<Charge> chargeMadeUnder(String idempotencyKey) throws InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(base.resolve("charges?idempotency_key=" + idempotencyKey))
                .timeout(timeout).GET().build();
        HttpResponse<String> response = exchange(request, "look up a charge");
        if (response.statusCode() != 200) {
            throw unavailable("charge lookup", response);
        }
        String body = response.body();
        return body.contains("\"id\"") ? Optional.of(new Charge(string(body, "id"), number(body, "amount")))
                : Optional.empty();
    }

    private HttpResponse<String> send(String path, String idempotencyKey, String json) throws InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout)
                .header("Content-Type", "application/json").header("Idempotency-Key", idempotencyKey)
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
        return exchange(request, "POST /" + path);
    }

    private HttpResponse<String> exchange(HttpRequest request, String what) throws InterruptedException {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException e) {
            throw new ProviderUnavailableException("the payment provider could not be reached for " + what, e);
        } catch (HttpTimeoutException e) {
            throw new OutcomeUnknownException("payment-provider", null, "the payment provider did not answer " + what
                    + " within " + timeout + ": it may have acted on it", e);
        } catch (IOException e) {
            throw new OutcomeUnknownException("payment-provider", null, "the connection to the payment provider broke "
                    + "during " + what + ": it may have acted on it", e);
        }
    }

    private static ProviderUnavailableException unavailable(String what, HttpResponse<String> response) {
        return new ProviderUnavailableException("the payment provider answered the " + what + " with "
                + response.statusCode() + ": " + response.body(), null);
    }

    private static String string(String json, String name) {
        return FlatJson.member(json, name);
    }

    private static long number(String json, String name) {
        String digits = FlatJson.member(json, name);
        if (digits == null) {
            throw new IllegalStateException("the payment provider's answer has no " + name + ": " + json);
        }
        return Long.parseLong(digits);
    }
}
