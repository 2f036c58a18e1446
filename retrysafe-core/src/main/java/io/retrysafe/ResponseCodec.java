package io.retrysafe;

import java.nio.charset.StandardCharsets;

/**
 * Turns an operation's result into the {@link StoredResponse} that is kept for replay, and back.
 * A replay returns {@code decode(encode(result))}, so the two must round-trip.
 */
public interface ResponseCodec<T> {

    StoredResponse encode(T result);

    T decode(StoredResponse stored);

    /** For operations that already produce a {@link StoredResponse}, such as an HTTP filter. */
    static ResponseCodec<StoredResponse> identity() {
        return new ResponseCodec<>() {
            @Override
            public StoredResponse encode(StoredResponse result) {
                return result;
            }

            @Override
            public StoredResponse decode(StoredResponse stored) {
                return stored;
            }
        };
    }

    /** A string result, stored as UTF-8 with status 200. */
    static ResponseCodec<String> utf8() {
        return new ResponseCodec<>() {
            @Override
            public StoredResponse encode(String result) {
                return StoredResponse.of(200, result.getBytes(StandardCharsets.UTF_8));
            }

            @Override
            public String decode(StoredResponse stored) {
                return new String(stored.body(), StandardCharsets.UTF_8);
            }
        };
    }
}
