package io.retrysafe.gateway;

import io.retrysafe.Attempt;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.Problem;
import io.retrysafe.servlet.RejectedRequests;
import io.retrysafe.servlet.RetrySafeFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.time.Duration;
import java.util.Collections;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.eclipse.jetty.client.BytesRequestContent;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.InputStreamRequestContent;
import org.eclipse.jetty.client.InputStreamResponseListener;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;

/**
 * Sends the request on to the upstream and writes its answer, blocking, through whatever response it is given
 * (behind the filter: the filter's capturing response, so that the answer is held back until its outcome is
 * recorded). Upstream faults are answers, told apart by whether the request left the gateway:
 *
 * <ul>
 * <li>not sent (connection refused, connect timeout, unknown host): {@code 503} {@code /problems/upstream-unavailable}
 *     with {@code Retry-After}; a 5xx releases the key, so a retry is sent;
 * <li>sent, and no answer (or an answer cut short): {@link OutcomeUnknownException}; the key stays in progress until
 *     its lease ends, and the filter answers {@code 503} {@code /problems/outcome-unknown};
 * <li>an answer, 5xx included: passed through as it is.
 * </ul>
 */
final class Forwarder extends HttpServlet {
    private static final long serialVersionUID = 1L;
    /** The attempt of the key this request runs under, as the upstream sees it (1, then 2 after a released key...). */
    static final String ATTEMPT_HEADER = "Idempotency-Attempt";
    private static final System.Logger LOG = System.getLogger(Forwarder.class.getName());
    /** Connection-level headers (RFC 9110, 7.6.1), never forwarded either way. */
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection",
            "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host",
            "content-length", "expect", "http2-settings");

    /** The detail of {@code 503 /problems/upstream-unavailable}. */
    static final String NOT_REACHED = "the service behind the gateway could not be reached; the request was not sent "
            + "to it. Retry after the time in Retry-After";
    /** The detail of {@code 503 /problems/outcome-unknown} for a request no route protects. */
    static final String NO_ANSWER = "the request was sent to the service behind the gateway, and no answer came: it may "
            + "have taken effect";

    /** The most a body of unknown length is buffered to, for an upstream that takes no chunked requests. */
    static final int MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

    private final transient HttpClient client;
    private final transient Deadlines deadlines;
    private final Duration retryAfter;
    private final String callerHeader;
    private final boolean chunkedRequests;

    /**
     * @param callerHeader where the upstream finds the caller the gateway checked; a client's own is never forwarded
     * @param chunkedRequests false to send every body with its length, buffering one of unknown length
     */
    Forwarder(HttpClient client, Deadlines deadlines, Duration retryAfter, String callerHeader,
            boolean chunkedRequests) {
        this.client = client;
        this.deadlines = deadlines;
        this.retryAfter = retryAfter;
        this.callerHeader = callerHeader;
        this.chunkedRequests = chunkedRequests;
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Routes.Target target = Routes.target(request);
        if (request.getDispatcherType() == DispatcherType.ASYNC
                && request.getAttribute(AsyncAnswer.ATTRIBUTE) instanceof AsyncAnswer pending) {
            request.removeAttribute(AsyncAnswer.ATTRIBUTE);
            answered(request, response, target, pending);
            return;
        }
        Attempt attempt = (Attempt) request.getAttribute(RetrySafeFilter.ATTEMPT_ATTRIBUTE);
        Request upstream = client.newRequest(uri(target.upstream(), request.getRequestURI(), request.getQueryString()))
                .method(request.getMethod())
                .idleTimeout(target.responseTimeout().toMillis(), TimeUnit.MILLISECONDS);
        upstream.headers(h -> {
            for (String name : Collections.list(request.getHeaderNames())) {
                if (forwards(name, callerHeader)) {
                    for (String value : Collections.list(request.getHeaders(name))) {
                        h.add(name, value);
                    }
                }
            }
            addProxyHeaders(h, request.getRemoteAddr(), request.getHeader("X-Forwarded-For"), request.getScheme(),
                    request.getHeader("Host"), attempt == null ? null : attempt.number(),
                    (String) request.getAttribute(Routes.CALLER), callerHeader);
        });
        if (!body(request, response, upstream, attempt != null)) {
            return;
        }
        if (attempt == null && request.isAsyncSupported()) {
            // Nothing to record: the answer is awaited without holding this thread.
            AsyncAnswer.send(request.startAsync(request, response), response, upstream, target, deadlines);
            return;
        }
        AwaitedAnswer awaited = new AwaitedAnswer(upstream);
        awaited.send(deadlines, target.responseTimeout());
        try {
            awaited.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            upstream.abort(e);
            failed(request, response, target, awaited.sent(), "interrupted while waiting for the answer", e);
            return;
        }
        CollectedBody body = awaited.collected();
        if (body == null) {
            answered(request, response, target, awaited);
            return;
        }
        writeCollected(awaited, body, response, target);
    }

    /**
     * Writes an answer collected whole. A client that left meanwhile is logged, not thrown: the upstream answered, so
     * its outcome is recorded (on a protected route) as when a streamed answer's client leaves ({@link #copy}).
     */
    static void writeCollected(UpstreamAnswer answer, CollectedBody body, HttpServletResponse response,
            Routes.Target target) {
        try {
            copyHeaders(answer.answer(), response);
            response.getOutputStream().write(body.bytes().array(), 0, body.length());
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.INFO, () -> "the client left before the answer of " + target.upstream() + " was written: "
                    + e);
        }
    }

    /** An answer that was not collected, on a request thread: streamed, or a failure. */
    private void answered(HttpServletRequest request, HttpServletResponse response, Routes.Target target,
            UpstreamAnswer pending) throws IOException {
        Response answer = pending.answer();
        if (pending.stream() != null) {
            copy(pending.exchange(), answer, pending.stream(), response, target);
            return;
        }
        Throwable cause = pending.failure();
        // No answer, or one cut short before a byte of it was written: answered as on the blocking path.
        boolean sent = answer != null || pending.sent();
        failed(request, response, target, sent, (answer == null ? "" : "its answer was cut short: ") + cause, cause);
    }

    /** Whether a client's header goes on: not the connection's, nor one the gateway sets itself. */
    static boolean forwards(String name, String callerHeader) {
        return !HOP_BY_HOP.contains(name.toLowerCase(Locale.ROOT)) && !name.equalsIgnoreCase(ATTEMPT_HEADER)
                && !name.equalsIgnoreCase(callerHeader);
    }

    /**
     * The headers the gateway adds: where the request came from, the key's attempt (null when unprotected) and the
     * caller it checked (null when none).
     */
    static void addProxyHeaders(HttpFields.Mutable h, String client, String forwardedFor, String scheme, String host,
            Integer attempt, String caller, String callerHeader) {
        h.put("X-Forwarded-For", forwardedFor == null ? client : forwardedFor + ", " + client);
        h.put("X-Forwarded-Proto", scheme);
        if (host != null) {
            h.put("X-Forwarded-Host", host);
        }
        if (attempt != null) {
            h.put(ATTEMPT_HEADER, Integer.toString(attempt));
        }
        if (caller != null) {
            h.put(callerHeader, caller);
        }
    }

    /** The upstream's answer header (lower case) the client gets: not the connection's, nor the upstream's server. */
    static boolean passesBack(String lower) {
        return !HOP_BY_HOP.contains(lower) && !lower.equals("date") && !lower.equals("server");
    }

    static URI uri(URI base, String path, String query) {
        String prefix = base.getRawPath() == null ? "" : base.getRawPath();
        int end = prefix.length();
        while (end > 0 && prefix.charAt(end - 1) == '/') {
            end--; // without a pattern compiled on every request
        }
        prefix = prefix.substring(0, end);
        return URI.create(base.getScheme() + "://" + base.getRawAuthority() + prefix + path
                + (query == null ? "" : "?" + query));
    }

    /**
     * A protected request's body was read and bounded by the filter: sent with its length. Another is streamed, with
     * the length it declared; one of unknown length is streamed chunked, or, when the upstream takes no chunked
     * requests, buffered up to {@link #MAX_BUFFERED_BYTES} and sent with its length.
     *
     * @return false when the request was answered instead ({@code 413}: too large to buffer)
     */
    private boolean body(HttpServletRequest request, HttpServletResponse response, Request upstream, boolean buffered)
            throws IOException {
        long length = request.getContentLengthLong();
        boolean chunked = length < 0 && request.getHeader("Transfer-Encoding") != null;
        if (length <= 0 && !chunked && !buffered) {
            return true;
        }
        String type = request.getContentType();
        try {
            if (buffered || (length > 0 && length <= HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES)) {
                byte[] body = request.getInputStream().readAllBytes();
                if (body.length > 0 || length == 0) {
                    upstream.body(new BytesRequestContent(type, body));
                }
                return true;
            }
            if (chunked && !chunkedRequests) {
                return buffered(request, response, upstream, type);
            }
        } catch (ForwardedRequest.SlowBodyException e) {
            // Nothing was sent: the client is told, and the connection is closed.
            response.setHeader("Connection", "close");
            EdgeProblems.send(response, HttpServletResponse.SC_REQUEST_TIMEOUT, e.getMessage());
            return false;
        }
        upstream.body(new InputStreamRequestContent(type, request.getInputStream()) {
            @Override
            public long getLength() {
                return length; // -1 (chunked) when the client declared none
            }
        });
        return true;
    }

    /** A body of unknown length, buffered to be sent with its length; false when it is answered {@code 413}. */
    private static boolean buffered(HttpServletRequest request, HttpServletResponse response, Request upstream,
            String type) throws IOException {
        byte[] body = request.getInputStream().readNBytes(MAX_BUFFERED_BYTES + 1);
        if (body.length > MAX_BUFFERED_BYTES) {
            RejectedRequests.refuseUnread(request, response, () -> EdgeProblems.send(response,
                    HttpServletResponse.SC_REQUEST_ENTITY_TOO_LARGE, "a body of unknown length is forwarded with its "
                    + "length, buffered up to " + MAX_BUFFERED_BYTES + " bytes; this one is larger. Send it with a "
                    + "Content-Length"));
            return false;
        }
        upstream.body(new BytesRequestContent(type, body));
        return true;
    }

    private void failed(HttpServletRequest request, HttpServletResponse response, Routes.Target target, boolean sent,
            String what, Throwable cause) throws IOException {
        if (!sent) {
            // Not a byte of it reached the upstream: nothing happened there, and a retry may send it.
            LOG.log(Level.WARNING, () -> "upstream " + target.upstream() + " not reached: " + what);
            Problem.UPSTREAM_UNAVAILABLE.send(response, NOT_REACHED, null, retryAfter);
            return;
        }
        LOG.log(Level.WARNING, () -> "upstream " + target.upstream() + " got the request and did not answer: " + what);
        if (request.getAttribute(RetrySafeFilter.ATTEMPT_ATTRIBUTE) == null) {
            // Unprotected (no key): nothing to hold; the client is told as much as the gateway knows.
            Problem.OUTCOME_UNKNOWN.send(response, NO_ANSWER, null, null);
            return;
        }
        // The upstream may be running it still: the key stays in progress until its lease ends, never sent twice.
        throw new OutcomeUnknownException("upstream", target.lease(), "the request was sent to " + target.upstream()
                + " and " + what, cause);
    }

    /** The answer's status and headers, less those of the connection and the gateway's own. */
    static void copyHeaders(Response answer, HttpServletResponse response) {
        response.setStatus(answer.getStatus());
        for (HttpField field : answer.getHeaders()) {
            String lower = field.getLowerCaseName();
            if (!passesBack(lower)) {
                continue;
            }
            if (lower.equals("content-type")) {
                response.setContentType(field.getValue());
            } else {
                response.addHeader(field.getName(), field.getValue());
            }
        }
    }

    private static void copy(Request upstream, Response answer, InputStreamResponseListener listener,
            HttpServletResponse response, Routes.Target target) throws IOException {
        copyHeaders(answer, response);
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = listener.getInputStream()) {
            OutputStream out = response.getOutputStream();
            while (true) {
                int n;
                try {
                    n = in.read(buffer);
                } catch (IOException e) {
                    // The upstream answered, so it processed the request; its answer is cut short and cannot be
                    // stored or replayed whole.
                    throw new OutcomeUnknownException("upstream", target.lease(), "the answer of " + target.upstream()
                            + " was cut short: " + e, e);
                }
                if (n < 0) {
                    break;
                }
                try {
                    out.write(buffer, 0, n);
                } catch (IOException e) {
                    // The client left while an answer over the bound streamed to it. The upstream answered: its
                    // outcome is recorded (without the body) rather than released, so a retry is not sent again.
                    LOG.log(Level.INFO, () -> "the client left while the answer of " + target.upstream()
                            + " streamed to it: " + e);
                    upstream.abort(e);
                    return;
                }
            }
        }
    }

    /**
     * The answer a request thread waits for: woken once, when the answer has all come (or its headers, when it streams),
     * or the exchange failed. The exchange always ends: the wait for the headers is bounded by the route's response
     * time-out, the body's by the request's idle time-out, and stopping the client aborts what is left.
     */
    private static final class AwaitedAnswer extends UpstreamAnswer {
        private final CountDownLatch arrived = new CountDownLatch(1);

        AwaitedAnswer(Request upstream) {
            super(upstream);
        }

        @Override
        void arrived() {
            arrived.countDown();
        }

        void await() throws InterruptedException {
            arrived.await();
        }
    }
}
