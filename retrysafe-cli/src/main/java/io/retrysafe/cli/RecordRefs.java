package io.retrysafe.cli;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Optional;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Names a record in the console's links and forms without showing its key: the scope and key sealed
 * with AES-GCM under a key made at start and never written anywhere. A reference opens only in the
 * console that made it; one altered or from an earlier run does not open.
 */
final class RecordRefs {
    private static final String TRANSFORMATION = "AES/GCM/NoPadding";
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;

    private final SecureRandom random;
    private final SecretKey key;

    /** The scope and key a reference names. */
    record Ref(String scope, String key) {
        @Override
        public String toString() {
            return "Ref[scope=" + scope + "]"; // the key stays out of every message
        }
    }

    RecordRefs(SecureRandom random) {
        this.random = random;
        byte[] bytes = new byte[32];
        random.nextBytes(bytes);
        this.key = new SecretKeySpec(bytes, "AES");
    }

    String seal(String scope, String recordKey) {
        byte[] scopeBytes = scope.getBytes(StandardCharsets.UTF_8);
        byte[] keyBytes = recordKey.getBytes(StandardCharsets.UTF_8);
        byte[] plain = ByteBuffer.allocate(4 + scopeBytes.length + keyBytes.length).putInt(scopeBytes.length)
                .put(scopeBytes).put(keyBytes).array();
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        byte[] sealed = crypt(Cipher.ENCRYPT_MODE, nonce, plain);
        byte[] out = ByteBuffer.allocate(NONCE_BYTES + sealed.length).put(nonce).put(sealed).array();
        return Base64.getUrlEncoder().withoutPadding().encodeToString(out);
    }

    /** The record {@code ref} names, or empty if it is not one this console made. */
    Optional<Ref> open(String ref) {
        if (ref == null || ref.isEmpty() || ref.length() > 4096) {
            return Optional.empty();
        }
        try {
            byte[] in = Base64.getUrlDecoder().decode(ref);
            // Only the one spelling seal() writes: base64 lets the last character vary in bits it drops.
            if (in.length <= NONCE_BYTES || !Base64.getUrlEncoder().withoutPadding().encodeToString(in).equals(ref)) {
                return Optional.empty();
            }
            byte[] nonce = java.util.Arrays.copyOf(in, NONCE_BYTES);
            ByteBuffer plain = ByteBuffer.wrap(crypt(Cipher.DECRYPT_MODE, nonce,
                    java.util.Arrays.copyOfRange(in, NONCE_BYTES, in.length)));
            byte[] scope = new byte[plain.getInt()];
            plain.get(scope);
            byte[] recordKey = new byte[plain.remaining()];
            plain.get(recordKey);
            return Optional.of(new Ref(new String(scope, StandardCharsets.UTF_8),
                    new String(recordKey, StandardCharsets.UTF_8)));
        } catch (IllegalArgumentException | NotOurs e) {
            return Optional.empty();
        }
    }

    private byte[] crypt(int mode, byte[] nonce, byte[] input) {
        try {
            Cipher cipher = Cipher.getInstance(TRANSFORMATION);
            cipher.init(mode, key, new GCMParameterSpec(TAG_BITS, nonce));
            return cipher.doFinal(input);
        } catch (javax.crypto.AEADBadTagException e) {
            throw new NotOurs(e);
        } catch (GeneralSecurityException e) {
            // AES-GCM is in every JDK: reaching this is a broken runtime, not bad input.
            throw new IllegalStateException("AES-GCM failed: " + e, e);
        }
    }

    /** A reference that fails its tag: not one of ours. */
    private static final class NotOurs extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotOurs(Throwable cause) {
            super(cause);
        }
    }
}
