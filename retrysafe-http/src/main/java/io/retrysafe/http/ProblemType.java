package io.retrysafe.http;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The RFC 9457 problems every HTTP stack answers with. Each {@code type} is stable: clients may branch
 * on it. They are listed, with when each is sent, in {@code docs/http.md}.
 */
public enum ProblemType {
    MISSING_KEY(400, "missing-key", "Idempotency-Key required"),
    INVALID_KEY(400, "invalid-key", "Invalid Idempotency-Key"),
    MALFORMED_JSON(400, "malformed-json", "Malformed JSON body"),
    INCOMPLETE_BODY(400, "incomplete-body", "Request body incomplete"),
    MALFORMED_FORM(400, "malformed-form", "Malformed form body"),
    REQUEST_REJECTED(400, "request-rejected", "Request rejected before it was processed"),
    UNAUTHENTICATED(401, "unauthenticated", "No caller to scope the key to"),
    IN_PROGRESS(409, "request-in-progress", "A request with this key is in progress"),
    PRECONDITION_FAILED(412, "stale-version", "The resource has changed"),
    PAYLOAD_TOO_LARGE(413, "request-too-large", "Request body too large to fingerprint"),
    KEY_REUSED(422, "key-reused", "Idempotency-Key reused with a different request"),
    PRECONDITION_REQUIRED(428, "version-required", "If-Match required"),
    STORED_RESPONSE_UNREADABLE(500, "stored-response-unreadable", "Stored response cannot be read"),
    ASYNC_HANDLER_REFUSED(500, "async-handler-refused", "Asynchronous handler on a transactional route"),
    STREAMING_REFUSED(500, "streaming-refused", "Streaming response on an idempotent route"),
    STORE_UNAVAILABLE(503, "store-unavailable", "Idempotency store unavailable"),
    OUTCOME_UNKNOWN(503, "outcome-unknown", "Outcome unknown"),
    /** A proxy could not reach the service behind it: the request was not sent, and a retry may be. */
    UPSTREAM_UNAVAILABLE(503, "upstream-unavailable", "Upstream service unavailable");

    /** Where the types live; relative so that a service can serve its own pages for them. */
    public static final String TYPE_BASE = "/problems/";
    public static final String CONTENT_TYPE = "application/problem+json";

    private final int status;
    private final String slug;
    private final String title;

    ProblemType(int status, String slug, String title) {
        this.status = status;
        this.slug = slug;
        this.title = title;
    }

    public int status() {
        return status;
    }

    public String type() {
        return TYPE_BASE + slug;
    }

    public String title() {
        return title;
    }

    /** The problem document, with {@code extra} appended as already-encoded JSON members (may be empty). */
    public byte[] body(String detail, String extra) {
        StringBuilder json = new StringBuilder(160).append("{\"type\":\"").append(type()).append("\",\"title\":\"")
                .append(title).append("\",\"status\":").append(status);
        if (detail != null) {
            json.append(",\"detail\":");
            quote(detail, json);
        }
        if (extra != null && !extra.isEmpty()) {
            json.append(',').append(extra);
        }
        return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** This problem as a whole response; {@code retryAfter} (may be null) adds {@code Retry-After}. */
    public HttpAnswer answer(String detail, String extra, Duration retryAfter) {
        HttpAnswer.Builder answer = HttpAnswer.status(status).header("Content-Type", CONTENT_TYPE);
        if (retryAfter != null) {
            answer.header(HttpSemantics.RETRY_AFTER, retryAfterSeconds(retryAfter));
        }
        return answer.body(body(detail, extra));
    }

    /** {@code Retry-After} in whole seconds, rounded up, at least 1. */
    public static String retryAfterSeconds(Duration retryAfter) {
        return Long.toString(Math.max(1, (retryAfter.toMillis() + 999) / 1000));
    }

    /** Appends {@code s} to {@code out} as a JSON string. */
    public static void quote(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
