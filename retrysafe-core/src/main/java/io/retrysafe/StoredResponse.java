package io.retrysafe;

import io.retrysafe.internal.Require;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The answer kept for replay: a status, the allow-listed headers and the body. Immutable; the body
 * is copied in and out, so a stored answer cannot be changed by whoever holds it.
 */
public final class StoredResponse {
    private final int status;
    private final Map<String, List<String>> headers;
    private final byte[] body;

    private StoredResponse(int status, Map<String, List<String>> headers, byte[] body) {
        this.status = status;
        this.headers = headers;
        this.body = body;
    }

    public static StoredResponse of(int status, Map<String, List<String>> headers, byte[] body) {
        Require.between(status, 100, 999, "status");
        Require.notNull(headers, "headers");
        Require.notNull(body, "body");
        Map<String, List<String>> copy = new LinkedHashMap<>();
        headers.forEach((name, values) -> copy.put(Require.notNull(name, "header name"), List.copyOf(values)));
        return new StoredResponse(status, java.util.Collections.unmodifiableMap(copy), body.clone());
    }

    public static StoredResponse of(int status, byte[] body) {
        return of(status, Map.of(), body);
    }

    public int status() {
        return status;
    }

    public Map<String, List<String>> headers() {
        return headers;
    }

    public byte[] body() {
        return body.clone();
    }

    public int bodyLength() {
        return body.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other && status == other.status && headers.equals(other.headers)
                && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * status + headers.hashCode()) + Arrays.hashCode(body);
    }

    @Override
    public String toString() {
        return "StoredResponse[status=" + status + ", headers=" + headers.keySet() + ", body=" + body.length + " bytes]";
    }
}
