package io.retrysafe;

import java.nio.charset.StandardCharsets;

/** The codecs {@link ResponseCodec} names, one instance each. */
final class Codecs {
    static final ResponseCodec<StoredResponse> IDENTITY = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(StoredResponse result) {
            return result;
        }

        @Override
        public StoredResponse decode(StoredResponse stored) {
            return stored;
        }
    };

    static final ResponseCodec<String> UTF8 = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(String result) {
            return StoredResponse.of(200, result.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String decode(StoredResponse stored) {
            return new String(stored.body(), StandardCharsets.UTF_8);
        }
    };

    private Codecs() {
    }
}
