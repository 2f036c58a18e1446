package io.retrysafe;

import io.retrysafe.internal.Hex;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Locale;

/**
 * Computes the fingerprint of a request from its method, route, content type and body. The HTTP
 * module adds a canonical-JSON fingerprinter; implement this to fingerprint anything else.
 */
@FunctionalInterface
public interface Fingerprinter {

    Fingerprint fingerprint(String method, String route, String contentType, byte[] body);

    /**
     * SHA-256 over the upper-cased method, the route, the media type (lower-cased, white space
     * removed) and the body bytes, each prefixed with its length so that no two different requests
     * concatenate to the same input.
     */
    static Fingerprinter standard() {
        return (method, route, contentType, body) -> {
            MessageDigest sha = Hex.sha256();
            field(sha, method == null ? new byte[0] : method.toUpperCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
            field(sha, route == null ? new byte[0] : route.getBytes(StandardCharsets.UTF_8));
            field(sha, contentType == null ? new byte[0]
                    : contentType.replaceAll("\\s", "").toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
            field(sha, body == null ? new byte[0] : body);
            return Fingerprint.of(sha.digest());
        };
    }

    private static void field(MessageDigest sha, byte[] value) {
        sha.update(ByteBuffer.allocate(Integer.BYTES).putInt(value.length).array());
        sha.update(value);
    }
}
