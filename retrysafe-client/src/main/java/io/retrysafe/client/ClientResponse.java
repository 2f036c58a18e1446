package io.retrysafe.client;

import java.net.http.HttpResponse;

/**
 * What a {@link RetryingClient} call ended with.
 *
 * @param response the last attempt's response, whose body went through the caller's body handler
 * @param key      the {@code Idempotency-Key} sent on every attempt; keep it to retry the same intent later
 * @param attempts how many requests were sent, 1 when the first was answered for good
 * @param replayed whether the server answered with {@code Idempotent-Replayed: true}: an earlier attempt
 *                 (whose answer was lost) had already done the work, and this is its stored response
 */
public record ClientResponse<T>(HttpResponse<T> response, String key, int attempts, boolean replayed) {
    public int statusCode() {
        return response.statusCode();
    }

    public T body() {
        return response.body();
    }

    /** Leaves the key out: within its scope a key replays a response, so it is not for logs. */
    @Override
    public String toString() {
        return "ClientResponse[status=" + response.statusCode() + ", attempts=" + attempts + ", replayed=" + replayed
                + "]";
    }
}
