package io.retrysafe.servlet;

import io.retrysafe.http.ProblemType;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;

/**
 * The RFC 9457 problems the filter answers with: the {@link ProblemType}s every HTTP stack shares,
 * written onto a servlet response. Each {@code type} is stable: clients may branch on it. They are
 * listed, with when each is sent, in {@code docs/http.md}.
 */
public enum Problem {
    MISSING_KEY(ProblemType.MISSING_KEY),
    INVALID_KEY(ProblemType.INVALID_KEY),
    MALFORMED_JSON(ProblemType.MALFORMED_JSON),
    INCOMPLETE_BODY(ProblemType.INCOMPLETE_BODY),
    MALFORMED_FORM(ProblemType.MALFORMED_FORM),
    REQUEST_REJECTED(ProblemType.REQUEST_REJECTED),
    UNAUTHENTICATED(ProblemType.UNAUTHENTICATED),
    IN_PROGRESS(ProblemType.IN_PROGRESS),
    PRECONDITION_FAILED(ProblemType.PRECONDITION_FAILED),
    PAYLOAD_TOO_LARGE(ProblemType.PAYLOAD_TOO_LARGE),
    KEY_REUSED(ProblemType.KEY_REUSED),
    PRECONDITION_REQUIRED(ProblemType.PRECONDITION_REQUIRED),
    STORED_RESPONSE_UNREADABLE(ProblemType.STORED_RESPONSE_UNREADABLE),
    ASYNC_HANDLER_REFUSED(ProblemType.ASYNC_HANDLER_REFUSED),
    STREAMING_REFUSED(ProblemType.STREAMING_REFUSED),
    STORE_UNAVAILABLE(ProblemType.STORE_UNAVAILABLE),
    OUTCOME_UNKNOWN(ProblemType.OUTCOME_UNKNOWN),
    /** A proxy could not reach the service behind it: the request was not sent, and a retry may be. */
    UPSTREAM_UNAVAILABLE(ProblemType.UPSTREAM_UNAVAILABLE);

    /** Where the types live; relative so that a service can serve its own pages for them. */
    public static final String TYPE_BASE = ProblemType.TYPE_BASE;
    public static final String CONTENT_TYPE = ProblemType.CONTENT_TYPE;

    private final ProblemType type;

    Problem(ProblemType type) {
        this.type = type;
    }

    public int status() {
        return type.status();
    }

    public String type() {
        return type.type();
    }

    public String title() {
        return type.title();
    }

    /** The problem document, with {@code extra} appended as already-encoded JSON members (may be empty). */
    public byte[] body(String detail, String extra) {
        return type.body(detail, extra);
    }

    /** Writes this problem as the whole response; {@code retryAfter} adds {@code Retry-After} in whole seconds. */
    public void send(HttpServletResponse response, String detail, String extra, Duration retryAfter) throws IOException {
        Answers.send(response, type.answer(detail, extra, retryAfter));
    }

    static void quote(String s, StringBuilder out) {
        ProblemType.quote(s, out);
    }
}
