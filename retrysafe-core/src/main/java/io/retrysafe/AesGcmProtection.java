package io.retrysafe;

import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.internal.Require;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Encrypts stored responses with AES-GCM (the JDK's own provider): headers and body are sealed
 * together, so a store holds the status and ciphertext only. Several keys may be configured, each
 * under an id; new records are sealed with the {@linkplain Builder#currentKey current} one, and the
 * id travels in the ciphertext's header, so records sealed under an earlier key still open while that
 * key stays configured. Rotating is: add the new key, make it current, and remove the old one once
 * the longest retention has passed.
 *
 * <pre>{@code
 * AesGcmProtection protection = AesGcmProtection.builder()
 *         .key("2026-10", previousKey)
 *         .key("2026-11", currentKey)
 *         .currentKey("2026-11")
 *         .build();
 * }</pre>
 *
 * <p>Layout of a sealed body: {@code "RSG1"}, one byte with the key id's length, the key id (ASCII),
 * a random 12-byte nonce, then the ciphertext with its 16-byte tag. The additional authenticated data
 * is that header, the status, the scope and the key: a sealed answer altered, given another status,
 * or copied onto another key or caller's scope fails its tag. A record that cannot be opened throws
 * {@link StoredResponseUnreadableException}; it is never replayed as it is stored.
 */
public final class AesGcmProtection implements StoredResponseProtection {
    /** The largest key id; ids are letters, digits, '.', '_' and '-'. */
    public static final int MAX_KEY_ID_LENGTH = 64;
    public static final boolean DEFAULT_READS_UNSEALED = false;

    private static final byte[] MAGIC = "RSG1".getBytes(StandardCharsets.US_ASCII);
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1," + MAX_KEY_ID_LENGTH + "}");
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final String TRANSFORMATION = "AES/GCM/NoPadding";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Map<String, SecretKeySpec> keys;
    private final String currentKey;
    private final boolean readsUnsealed;

    private AesGcmProtection(Builder b) {
        this.keys = Collections.unmodifiableMap(new LinkedHashMap<>(b.keys));
        this.currentKey = b.currentKey;
        this.readsUnsealed = b.readsUnsealed != null && b.readsUnsealed;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The id of the key new records are sealed with. */
    public String currentKey() {
        return currentKey;
    }

    @Override
    public StoredResponse seal(IdempotencyKey key, StoredResponse response) {
        byte[] header = header(currentKey);
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        byte[] headers = HeaderCodec.encode(response.headers()).getBytes(StandardCharsets.UTF_8);
        byte[] body = response.body();
        byte[] plain = ByteBuffer.allocate(4 + headers.length + body.length).putInt(headers.length).put(headers)
                .put(body).array();
        byte[] sealed;
        try {
            Cipher cipher = Cipher.getInstance(TRANSFORMATION);
            cipher.init(Cipher.ENCRYPT_MODE, keys.get(currentKey), new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(aad(header, response.status(), key));
            sealed = cipher.doFinal(plain);
        } catch (GeneralSecurityException e) {
            // AES-GCM is in every JDK: reaching this is a broken runtime, not bad input.
            throw new IllegalStateException("AES-GCM failed to encrypt: " + e, e);
        }
        byte[] out = ByteBuffer.allocate(header.length + NONCE_BYTES + sealed.length).put(header).put(nonce).put(sealed)
                .array();
        return StoredResponse.of(response.status(), Map.of(), out);
    }

    @Override
    public StoredResponse open(IdempotencyKey key, StoredResponse stored) {
        byte[] body = stored.body();
        if (!isSealed(stored, body)) {
            if (readsUnsealed) {
                return stored;
            }
            throw new StoredResponseUnreadableException("the stored response of key " + key.digest() + " is not "
                    + "encrypted, and this protection only replays encrypted responses (it was stored before "
                    + "encryption was turned on, or written by something else)");
        }
        int idLength = body[MAGIC.length] & 0xff;
        int headerLength = MAGIC.length + 1 + idLength;
        if (body.length < headerLength + NONCE_BYTES + TAG_BITS / 8) {
            throw new StoredResponseUnreadableException("the stored response of key " + key.digest()
                    + " is truncated: " + body.length + " bytes");
        }
        String id = new String(body, MAGIC.length + 1, idLength, StandardCharsets.US_ASCII);
        SecretKeySpec secret = keys.get(id);
        if (secret == null) {
            throw new StoredResponseUnreadableException("the stored response of key " + key.digest()
                    + " was encrypted with key id \"" + id + "\", which is not configured (configured: "
                    + keys.keySet() + "); keep a key configured until the records it sealed have expired");
        }
        byte[] plain;
        try {
            Cipher cipher = Cipher.getInstance(TRANSFORMATION);
            cipher.init(Cipher.DECRYPT_MODE, secret, new GCMParameterSpec(TAG_BITS, body, headerLength, NONCE_BYTES));
            cipher.updateAAD(aad(Arrays.copyOf(body, headerLength), stored.status(), key));
            plain = cipher.doFinal(body, headerLength + NONCE_BYTES, body.length - headerLength - NONCE_BYTES);
        } catch (AEADBadTagException e) {
            throw new StoredResponseUnreadableException("the stored response of key " + key.digest() + " failed its "
                    + "integrity check under key id \"" + id + "\": it was altered, copied from another record, or "
                    + "the key configured under that id is not the one that encrypted it", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM failed to decrypt: " + e, e);
        }
        ByteBuffer in = ByteBuffer.wrap(plain);
        int headersLength = in.getInt();
        String headers = new String(plain, 4, headersLength, StandardCharsets.UTF_8);
        byte[] original = Arrays.copyOfRange(plain, 4 + headersLength, plain.length);
        return StoredResponse.of(stored.status(), HeaderCodec.decode(headers), original);
    }

    /**
     * The id of the key {@code stored} was sealed under, or empty if it does not have the layout of a
     * sealed answer: for a tool that shows stored answers without opening them (the CLI's console).
     * Nothing is decrypted or checked; only {@link #open} tells whether it opens.
     */
    public static Optional<String> sealedKeyId(StoredResponse stored) {
        byte[] body = stored.body();
        if (!isSealed(stored, body) || body.length < MAGIC.length + 1 + (body[MAGIC.length] & 0xff)) {
            return Optional.empty();
        }
        return Optional.of(new String(body, MAGIC.length + 1, body[MAGIC.length] & 0xff, StandardCharsets.US_ASCII));
    }

    private static boolean isSealed(StoredResponse stored, byte[] body) {
        return stored.headers().isEmpty() && body.length > MAGIC.length
                && Arrays.equals(body, 0, MAGIC.length, MAGIC, 0, MAGIC.length);
    }

    private static byte[] header(String id) {
        byte[] idBytes = id.getBytes(StandardCharsets.US_ASCII);
        return ByteBuffer.allocate(MAGIC.length + 1 + idBytes.length).put(MAGIC).put((byte) idBytes.length).put(idBytes)
                .array();
    }

    private static byte[] aad(byte[] header, int status, IdempotencyKey key) {
        byte[] scope = key.scope().getBytes(StandardCharsets.UTF_8);
        byte[] value = key.value().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(header.length + 4 + scope.length + 1 + value.length).put(header).putInt(status)
                .put(scope).put((byte) 0).put(value).array();
    }

    @Override
    public String toString() {
        // Key ids only: never key material.
        return "AesGcmProtection[keys=" + keys.keySet() + ", currentKey=" + currentKey + "]";
    }

    /** Builds an {@link AesGcmProtection}; each key id, the current key and each flag may be set once. */
    public static final class Builder {
        private final Map<String, SecretKeySpec> keys = new LinkedHashMap<>();
        private String currentKey;
        private Boolean readsUnsealed;

        private Builder() {
        }

        /** A key that opens records sealed under {@code id}; 16, 24 or 32 bytes (AES-128, -192, -256). */
        public Builder key(String id, byte[] key) {
            Require.notNull(id, "key id");
            Require.notNull(key, "key");
            if (!KEY_ID.matcher(id).matches()) {
                throw new IllegalArgumentException("key id must be 1 to " + MAX_KEY_ID_LENGTH + " letters, digits, '.', "
                        + "'_' or '-', but was \"" + id + "\"");
            }
            if (keys.containsKey(id)) {
                throw new IllegalStateException("key id \"" + id + "\" was already set");
            }
            if (key.length != 16 && key.length != 24 && key.length != 32) {
                throw new IllegalArgumentException("key \"" + id + "\" must have 16, 24 or 32 bytes (AES-128, AES-192 "
                        + "or AES-256), but had " + key.length);
            }
            keys.put(id, new SecretKeySpec(key.clone(), "AES"));
            return this;
        }

        /** The id of the key that seals new records; it must be one of the {@link #key} ids. */
        public Builder currentKey(String id) {
            Require.unset(this.currentKey, "currentKey");
            this.currentKey = Require.notBlank(id, "currentKey");
            return this;
        }

        /**
         * Whether a response stored unencrypted (before encryption was turned on) is replayed as it
         * is; {@code false} by default, which refuses it as unreadable. Turn on while the records of
         * the unencrypted period are still live, then off again: an unencrypted response carries no
         * integrity check.
         */
        public Builder readsUnsealed(boolean readsUnsealed) {
            Require.unset(this.readsUnsealed, "readsUnsealed");
            this.readsUnsealed = readsUnsealed;
            return this;
        }

        public AesGcmProtection build() {
            if (keys.isEmpty()) {
                throw new IllegalStateException("configure at least one key: key(id, bytes)");
            }
            if (currentKey == null) {
                throw new IllegalStateException("choose the key that seals new records: currentKey(id), one of "
                        + keys.keySet());
            }
            if (!keys.containsKey(currentKey)) {
                throw new IllegalStateException("currentKey must be one of the configured key ids " + keys.keySet()
                        + ", but was \"" + currentKey + "\"");
            }
            return new AesGcmProtection(this);
        }
    }
}
