package io.retrysafe.spring;

import io.retrysafe.AesGcmProtection;
import io.retrysafe.StoredResponseProtection;
import java.util.Base64;
import java.util.Map;

/** {@code retrysafe.at-rest.*} checked at start-up, with messages that name the property to fix. */
final class AtRestKeys {
    private static final String PREFIX = "retrysafe.at-rest.";

    private AtRestKeys() {
    }

    static StoredResponseProtection protection(RetrySafeProperties.AtRest atRest) {
        Map<String, String> keys = atRest.keys() == null ? Map.of() : atRest.keys();
        if (keys.isEmpty()) {
            if (atRest.currentKey() != null) {
                throw new IllegalStateException(PREFIX + "current-key is " + atRest.currentKey() + ", but no key is "
                        + "configured: set " + PREFIX + "keys." + atRest.currentKey() + "=<base64 of 16, 24 or 32 bytes>");
            }
            return StoredResponseProtection.NONE;
        }
        AesGcmProtection.Builder b = AesGcmProtection.builder().readsUnsealed(atRest.readsUnsealed());
        keys.forEach((id, base64) -> {
            byte[] key;
            try {
                key = Base64.getDecoder().decode(base64 == null ? "" : base64.trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(PREFIX + "keys." + id + " must be base64, but is not: " + e.getMessage());
            }
            try {
                b.key(id, key);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(PREFIX + "keys." + id + ": " + e.getMessage());
            }
        });
        if (atRest.currentKey() == null || atRest.currentKey().isBlank()) {
            throw new IllegalStateException(PREFIX + "current-key must name the key new records are encrypted with, "
                    + "one of " + keys.keySet() + ", but was not set");
        }
        if (!keys.containsKey(atRest.currentKey())) {
            throw new IllegalStateException(PREFIX + "current-key must be one of the ids in " + PREFIX + "keys "
                    + keys.keySet() + ", but was " + atRest.currentKey());
        }
        return b.currentKey(atRest.currentKey()).build();
    }
}
