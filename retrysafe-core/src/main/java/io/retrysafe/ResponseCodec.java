package io.retrysafe;

/**
 * Turns an operation's result into the {@link StoredResponse} that is kept for replay, and back.
 * A replay returns {@code decode(encode(result))}, so the two must round-trip.
 */
public interface ResponseCodec<T> {

    StoredResponse encode(T result);

    T decode(StoredResponse stored);

    /**
     * For operations that already produce a {@link StoredResponse}, such as an HTTP filter. One instance, so that
     * the requests of one front door are seen to share their codec.
     */
    static ResponseCodec<StoredResponse> identity() {
        return Codecs.IDENTITY;
    }

    /** A string result, stored as UTF-8 with status 200. */
    static ResponseCodec<String> utf8() {
        return Codecs.UTF8;
    }
}
