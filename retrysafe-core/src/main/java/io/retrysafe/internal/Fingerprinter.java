package io.retrysafe.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.MalformedJsonException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;

/**
 * Computes the fingerprint of an HTTP request from its method, route, content type and body, the same way in
 * every front door: {@link #canonicalJson()} for JSON APIs, {@link #standard()} for exact bytes.
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
                    : withoutWhiteSpace(contentType).toLowerCase(Locale.ROOT).getBytes(StandardCharsets.UTF_8));
            field(sha, body == null ? new byte[0] : body);
            return Fingerprint.of(sha.digest());
        };
    }

    /**
     * Like {@link #standard()}, but a JSON body is hashed in its {@linkplain CanonicalJson canonical
     * form}, so that a client that re-serialises the same request (member order, white space, string
     * escapes, number spelling) is not refused as a different one. JSON is {@code application/json}
     * or any {@code +json} media type, parameters and case ignored; for a JSON body the fingerprint
     * covers the media type without its parameters (a charset says nothing for UTF-8-only JSON). An empty body, and a body of any
     * other media type, is hashed as by {@code standard()}, so the two agree on them.
     *
     * <p>{@code fingerprint} throws {@link MalformedJsonException} when a body labelled JSON is not
     * JSON: such a request cannot be told apart from a different one, and is answered with {@code 400}.
     */
    static Fingerprinter canonicalJson() {
        return canonicalizing(CanonicalJson::canonicalize);
    }

    /**
     * Like {@link #canonicalJson()}, but only the members the JSON Pointers select count, so that
     * fields that may change between retries (a client timestamp, a trace id) do not; a selected
     * member that is absent differs from one that is {@code null}. See
     * {@link CanonicalJson#canonicalize(byte[], List)}.
     *
     * @throws IllegalArgumentException now, if a pointer is malformed or duplicated or there is none
     */
    static Fingerprinter canonicalJson(List<String> jsonPointers) {
        return canonicalizing(CanonicalJson.selecting(jsonPointers));
    }

    private static Fingerprinter canonicalizing(UnaryOperator<byte[]> canonicalize) {
        Fingerprinter standard = standard();
        return (method, route, contentType, body) -> {
            if (body == null || body.length == 0 || !isJson(contentType)) {
                return standard.fingerprint(method, route, contentType, body);
            }
            // JSON is UTF-8 by definition (RFC 8259): a charset parameter says nothing about the
            // intent, so a retry that adds or drops one is the same request.
            return standard.fingerprint(method, route, mediaType(contentType), canonicalize.apply(body));
        };
    }

    private static String mediaType(String contentType) {
        int semicolon = contentType.indexOf(';');
        return withoutWhiteSpace(semicolon < 0 ? contentType : contentType.substring(0, semicolon))
                .toLowerCase(Locale.ROOT);
    }

    /**
     * {@code text} without the white space the pattern {@code \s} matches; the same string, with nothing
     * allocated, when it has none (the usual case).
     */
    private static String withoutWhiteSpace(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean space = c == ' ' || c == '\t' || c == '\n' || c == 0x0B || c == '\f' || c == '\r';
            if (space && out == null) {
                out = new StringBuilder(text.length()).append(text, 0, i);
            } else if (!space && out != null) {
                out.append(c);
            }
        }
        return out == null ? text : out.toString();
    }

    /** application/json or a structured-syntax suffix such as application/problem+json (RFC 6839). */
    private static boolean isJson(String contentType) {
        if (contentType == null) {
            return false;
        }
        String mediaType = mediaType(contentType);
        int slash = mediaType.indexOf('/');
        return mediaType.equals("application/json")
                || (slash > 0 && mediaType.endsWith("+json") && mediaType.length() > slash + "+json".length() + 1);
    }

    private static void field(MessageDigest sha, byte[] value) {
        int n = value.length;
        // The length, big-endian, a byte at a time: no buffer per field.
        sha.update((byte) (n >>> 24));
        sha.update((byte) (n >>> 16));
        sha.update((byte) (n >>> 8));
        sha.update((byte) n);
        sha.update(value);
    }
}
