package io.retrysafe;

import java.nio.charset.StandardCharsets;

/**
 * Turns a step's value into the bytes saved with the key's recovery point, and back. A resumed
 * attempt is given {@code decode(encode(value))}, so the two must round-trip. Saved values are small:
 * the ids and amounts the next steps need, not documents (see {@link PhasedRetrySafe.Builder#maxSavedBytes}).
 */
public interface StepCodec<V> {

    byte[] encode(V value);

    V decode(byte[] saved);

    /** A string, saved as UTF-8; null is refused. */
    static StepCodec<String> utf8() {
        return new StepCodec<>() {
            @Override
            public byte[] encode(String value) {
                return value.getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public String decode(byte[] saved) {
                return new String(saved, StandardCharsets.UTF_8);
            }
        };
    }

    /** A step whose value does not matter: saves nothing but that the step happened, and gives back null. */
    static StepCodec<Void> none() {
        return new StepCodec<>() {
            @Override
            public byte[] encode(Void value) {
                return new byte[0];
            }

            @Override
            public Void decode(byte[] saved) {
                return null;
            }
        };
    }
}
