package io.retrysafe;

import io.retrysafe.internal.Require;
import java.util.function.UnaryOperator;

/**
 * What the engine does to a {@link StoredResponse} on its way into a store and back: nothing
 * ({@link #NONE}), encryption ({@link AesGcmProtection}), redaction ({@link #redacting}), or
 * several of them ({@link #andThen}). Not to be confused with {@link ResponseCodec}, which turns an
 * operation's typed result into a {@link StoredResponse}: protection works on that stored form, so
 * every store, and a fast path's cached copy, only ever holds what {@link #seal} returned.
 *
 * <pre>{@code
 * StoredResponseProtection protection = StoredResponseProtection
 *         .redacting(r -> StoredResponse.of(r.status(), r.headers(), maskCardNumbers(r.body())))
 *         .andThen(AesGcmProtection.builder().key("2026-11", key).currentKey("2026-11").build());
 * OperationPolicy policy = OperationPolicy.custom().protection(protection).build();
 * }</pre>
 *
 * Both methods get the record's key so that an implementation can bind what it seals to it: a
 * sealed answer copied onto another key (or another caller's scope) does not open.
 */
public interface StoredResponseProtection {

    /** Stores the response as the operation produced it. */
    StoredResponseProtection NONE = new StoredResponseProtection() {
        @Override
        public StoredResponse seal(IdempotencyKey key, StoredResponse response) {
            return response;
        }

        @Override
        public StoredResponse open(IdempotencyKey key, StoredResponse stored) {
            return stored;
        }

        @Override
        public String toString() {
            return "none";
        }
    };

    /** The form of {@code response} that is written to the store. */
    StoredResponse seal(IdempotencyKey key, StoredResponse response);

    /**
     * The response to replay from what {@link #seal} wrote.
     *
     * @throws StoredResponseUnreadableException if {@code stored} cannot be opened (a key id no
     *     longer configured, a failed integrity check, or not sealed at all)
     */
    StoredResponse open(IdempotencyKey key, StoredResponse stored);

    /** This protection first, then {@code next} on its result; opening goes the other way round. */
    default StoredResponseProtection andThen(StoredResponseProtection next) {
        Require.notNull(next, "next");
        StoredResponseProtection first = this;
        return new StoredResponseProtection() {
            @Override
            public StoredResponse seal(IdempotencyKey key, StoredResponse response) {
                return next.seal(key, first.seal(key, response));
            }

            @Override
            public StoredResponse open(IdempotencyKey key, StoredResponse stored) {
                return first.open(key, next.open(key, stored));
            }

            @Override
            public String toString() {
                return first + " then " + next;
            }
        };
    }

    /**
     * Stores {@code redactor}'s version of each response instead of the original; {@link #open}
     * returns it unchanged. The attempt that ran still answers its own client with the full response;
     * every replay (and a fast path's cached copy) answers with the redacted one.
     */
    static StoredResponseProtection redacting(UnaryOperator<StoredResponse> redactor) {
        Require.notNull(redactor, "redactor");
        return new StoredResponseProtection() {
            @Override
            public StoredResponse seal(IdempotencyKey key, StoredResponse response) {
                StoredResponse redacted = redactor.apply(response);
                if (redacted == null) {
                    throw new IllegalStateException("the redactor returned null for key " + key.digest()
                            + "; return the response to store (the original when nothing is to be redacted)");
                }
                return redacted;
            }

            @Override
            public StoredResponse open(IdempotencyKey key, StoredResponse stored) {
                return stored;
            }

            @Override
            public String toString() {
                return "redacting";
            }
        };
    }
}
