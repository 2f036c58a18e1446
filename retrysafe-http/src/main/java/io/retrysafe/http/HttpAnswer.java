package io.retrysafe.http;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A response as every HTTP stack writes it: status, headers in order, body. What the shared decisions
 * answer with; each stack only copies it onto its own response.
 *
 * @param status the status code
 * @param headers header names, as written, to their values in order
 * @param body the body, possibly empty
 */
public record HttpAnswer(int status, Map<String, List<String>> headers, byte[] body) {

    public HttpAnswer {
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        body = body.clone();
    }

    @Override
    public byte[] body() {
        return body.clone();
    }

    static Builder status(int status) {
        return new Builder(status);
    }

    /** Collects headers, then the body ends it. */
    static final class Builder {
        private final int status;
        private final Map<String, List<String>> headers = new LinkedHashMap<>();

        private Builder(int status) {
            this.status = status;
        }

        Builder header(String name, String value) {
            headers.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
            return this;
        }

        HttpAnswer body(byte[] body) {
            return new HttpAnswer(status, headers, body);
        }
    }
}
