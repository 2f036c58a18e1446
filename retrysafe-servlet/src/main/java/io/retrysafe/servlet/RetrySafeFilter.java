package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.OperationFailedException;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpForms;
import io.retrysafe.http.HttpForms.MalformedFormException;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.Charset;
import java.nio.charset.IllegalCharsetNameException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The IETF Idempotency-Key semantics for the configured routes:
 *
 * <ul>
 * <li>missing key where required, or malformed (empty, too long, not printable ASCII, several values) → {@code 400};
 * <li>body over the fingerprint bound → {@code 413}; body ending before its declared length, or a form body
 *     the container cannot parse → {@code 400};
 * <li>no caller to scope the key to → {@code 401};
 * <li>first request → runs; its response is held back until its outcome is durable, then sent (a body over
 *     {@code maxResponseBytes} is sent as it is written, and stored without its body);
 * <li>an asynchronous handler → the same, when its cycle's last {@code ASYNC} dispatch ends (standalone mode;
 *     refused with {@code 500} where the executor's transaction cannot outlive the request thread); a cycle that
 *     times out → {@code 503} {@code outcome-unknown}, its key kept in progress until its lease ends;
 * <li>retry → the stored response, with {@code Idempotent-Replayed: true};
 * <li>retry while the first is in flight → {@code 409} + {@code Retry-After};
 * <li>same key, another request → {@code 422}; store unreachable → {@code 503} + {@code Retry-After};
 * <li>standalone mode, the handler ran but its outcome could not be stored → {@code 503} {@code outcome-unknown};
 * <li>completed earlier, but its stored response cannot be opened (encryption key gone, tampered) → {@code 500}.
 * </ul>
 *
 * Every refusal is an RFC 9457 {@code application/problem+json} document of a stable {@link Problem} type.
 * Requests on other routes, or without a key on a route where it is optional, pass through untouched.
 * Routes are matched on the normalised path, so no other spelling of a protected path walks around it;
 * requests refused before the filter runs are answered by {@link RejectedRequests}.
 */
public final class RetrySafeFilter implements Filter {
    public static final String REPLAYED_HEADER = HttpSemantics.REPLAYED_HEADER;
    /**
     * Set on a request the filter protects, before its handler runs: {@code Boolean.TRUE} when a handler that goes
     * asynchronous is recorded when it finishes, {@code FALSE} when it is refused (transactional mode). A framework
     * that knows beforehand whether the handler will go asynchronous or stream refuses it before it runs.
     */
    public static final String ASYNC_SUPPORTED_ATTRIBUTE = RetrySafeFilter.class.getName() + ".asyncSupported";
    /**
     * Set on a request the filter protects, before its handler runs: the {@link io.retrysafe.Attempt} running it
     * (its number is 1 on the first run, and grows each time a retry runs the handler again after a released key or
     * an expired lease). A handler that passes the request on (a proxy) can tell the next hop which attempt it is.
     */
    public static final String ATTEMPT_ATTRIBUTE = RetrySafeFilter.class.getName() + ".attempt";
    /**
     * Set on a request the filter protects, before it answers or runs the handler: the pattern of its route, as
     * declared. An answer the filter gives itself (a replay, a refusal) was matched to no handler by the framework,
     * so metrics that tag a request by its handler's pattern find none there; they can take this one.
     */
    public static final String ROUTE_ATTRIBUTE = RetrySafeFilter.class.getName() + ".route";

    private static final System.Logger LOG = System.getLogger(RetrySafeFilter.class.getName());

    private final HttpIdempotency config;
    private final IdempotentExecutor executor;
    private final RetrySafeListener listener;
    private final RejectedRequests rejected;

    /**
     * @param listener hears keys refused before the engine (usually {@code engine.listener()})
     */
    public RetrySafeFilter(HttpIdempotency config, IdempotentExecutor executor, RetrySafeListener listener) {
        this.config = Require.notNull(config, "config");
        this.executor = Require.notNull(executor, "executor");
        this.listener = Require.notNull(listener, "listener");
        this.rejected = new RejectedRequests(config, listener);
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        if (!(req instanceof HttpServletRequest request) || !(res instanceof HttpServletResponse response)) {
            chain.doFilter(req, res);
            return;
        }
        AsyncCapture async = AsyncCapture.of(request);
        if (async != null && request.getDispatcherType() == DispatcherType.ASYNC) {
            async.dispatched(chain, request, response);
            return;
        }
        if (request.getDispatcherType() != DispatcherType.REQUEST) {
            chain.doFilter(req, res);
            return;
        }
        String path = RequestPath.of(request);
        IdempotentRoute route = config.route(request.getMethod(), path);
        if (route == null) {
            chain.doFilter(request, response);
            return;
        }
        List<String> keyHeaders = Collections.list(request.getHeaders(HttpIdempotency.HEADER));
        if (keyHeaders.isEmpty() && !route.keyRequired()) {
            chain.doFilter(request, response);
            return;
        }
        request.setAttribute(ROUTE_ATTRIBUTE, route.route().pattern());
        String keyValue;
        try {
            keyValue = config.keyRules().parseHeader(keyHeaders);
        } catch (InvalidKeyException e) {
            RejectedRequests.refuseUnread(request, response, () -> rejected.refuseKey(response, e));
            return;
        }
        String principal = config.scope().resolve(request);
        if (principal == null) {
            RejectedRequests.refuseUnread(request, response, () -> Answers.send(response, HttpSemantics.noCaller()));
            return;
        }
        IdempotencyKey key;
        try {
            key = config.keyRules().key(HttpSemantics.scope(principal, route.route()), keyValue);
        } catch (IllegalArgumentException e) {
            RejectedRequests.refuseUnread(request, response, () -> Problem.UNAUTHENTICATED.send(response,
                    "the caller's identity cannot scope a key: " + e.getMessage(), null, null));
            return;
        }
        FingerprintedRequest fingerprinted = fingerprint(request, path, route);
        if (fingerprinted.refusal != null) {
            // Too large, cut short or malformed: the body may not have been read to its end.
            if (fingerprinted.unread) {
                RejectedRequests.refuseUnread(request, response,
                        () -> fingerprinted.refusal.send(response, fingerprinted.detail, null, null));
            } else {
                // Cut short, malformed or over the bound as it was read: what is left is not read on.
                RejectedRequests.closeAfterAnswer(request, response);
                fingerprinted.refusal.send(response, fingerprinted.detail, null, null);
            }
            return;
        }
        HttpServletRequest handlerRequest = fingerprinted.request;
        CapturingResponse capture = new CapturingResponse(response, config.maxResponseBytes(),
                config.includeErrorMessages());
        Supplier<StoredResponse> stored = () -> capture.toStored(config.replayedHeaders());
        request.setAttribute(ASYNC_SUPPORTED_ATTRIBUTE, executor.isAsyncSupported(request));
        CompletableFuture<Outcome<StoredResponse>> outcome;
        boolean[] ran = {false};
        try {
            outcome = executor.executeAsync(request, key, fingerprinted.fingerprint, route.policy().orElse(null),
                    attempt -> {
                        if (ran[0]) {
                            // Run again within this request (key last without a look-up, after a rolled-back
                            // run): what the run before wrote was never sent, and is not part of this answer.
                            capture.reset();
                        }
                        ran[0] = true;
                        handlerRequest.setAttribute(ATTEMPT_ATTRIBUTE, attempt);
                        chain.doFilter(handlerRequest, capture);
                        if (request.isAsyncStarted()) {
                            return AsyncCapture.start(request, capture, stored).result();
                        }
                        return CompletableFuture.completedFuture(stored.get());
                    }).toCompletableFuture();
        } catch (StoredResponseUnreadableException e) {
            answerFailure(request, response, capture, key, e);
            return;
        }
        if (!outcome.isDone()) {
            // The handler went asynchronous: the thread that ends its cycle records the outcome and answers.
            outcome.whenComplete((done, failure) -> answerAsync(request, response, capture, key, done, failure));
            return;
        }
        Outcome<StoredResponse> done;
        try {
            done = outcome.join();
        } catch (CompletionException e) {
            answerFailure(request, response, capture, key, e.getCause());
            return;
        }
        answer(response, capture, done);
    }

    private void answerAsync(HttpServletRequest request, HttpServletResponse response, CapturingResponse capture,
            IdempotencyKey key, Outcome<StoredResponse> outcome, Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        if (cause != null && !(cause instanceof StoreUnavailableException)) {
            // The cycle failed, and the key is released: its own answer goes out unstored.
            return;
        }
        AsyncCapture async = AsyncCapture.of(request);
        if (async != null && async.isTimedOut()) {
            // The key stays in progress; the end of the cycle answers outcome-unknown, over what the application says.
            return;
        }
        try {
            if (cause != null) {
                answerFailure(request, response, capture, key, cause);
            } else {
                answer(response, capture, outcome);
            }
        } catch (IOException | ServletException | RuntimeException e) {
            LOG.log(Level.WARNING, () -> "key " + key.digest() + ": the asynchronous handler's answer could not be "
                    + "sent: " + e);
        }
    }

    /** The executor threw: the handler's own failure propagates; a failed record or a refused handler is a problem. */
    private void answerFailure(HttpServletRequest request, HttpServletResponse response, CapturingResponse capture,
            IdempotencyKey key, Throwable failure) throws IOException, ServletException {
        HttpAnswer problem = HttpSemantics.failure(failure);
        if (failure instanceof StoreUnavailableException e && !(e instanceof OutcomeUnknownException)
                && response.isCommitted()) {
            // The handler ran, but its outcome was not made durable (a failed commit rolled it back). A body
            // over the bound went out as it was written: too late for a 503; the connection is cut.
            throw new IOException("key " + key.digest() + ": the response was sent, but its outcome was not "
                    + "recorded: " + e.getMessage(), e);
        }
        if (problem != null) {
            // Outcome unknown (the handler ran and its outcome could not be stored, or the handler itself does
            // not know it, and the key stays in progress), not recorded (its held-back response must not reach
            // the client as a success), or a stored response that cannot be opened (not run again).
            LOG.log(Level.WARNING, () -> "key " + key.digest() + ": answering " + problem.status() + ": "
                    + failure.getMessage());
            response.reset();
            Answers.send(response, problem);
        } else if (failure instanceof AsyncHandlerRefusedException e) {
            AsyncCapture async = AsyncCapture.of(request);
            if (async != null) {
                async.abandon();
            }
            // The handler may still be answering on a thread of its own: cut it off before answering in its place,
            // and commit the answer, so that nothing it does later changes what the client gets.
            capture.detach();
            response.reset();
            Problem.ASYNC_HANDLER_REFUSED.send(response, e.getMessage(), null, null);
            response.flushBuffer();
            if (request.isAsyncStarted()) {
                try {
                    request.getAsyncContext().complete();
                } catch (IllegalStateException ended) {
                    // The handler ended the cycle itself (before returning, or on its own thread meanwhile): the
                    // container finishes it once this thread returns, with the refusal written above.
                }
            }
        } else if (failure instanceof OperationFailedException e) {
            throw rethrow(e.getCause());
        } else {
            throw rethrow(failure);
        }
    }

    private static void answer(HttpServletResponse response, CapturingResponse capture, Outcome<StoredResponse> outcome)
            throws IOException {
        HttpAnswer refusal = HttpSemantics.refusal(outcome);
        if (refusal == null) {
            capture.sendHeldBack();
        } else {
            Answers.send(response, refusal);
        }
    }

    /** A request ready to run, or its refusal; {@code unread} when refused before a byte of its body was read. */
    private record FingerprintedRequest(HttpServletRequest request, Fingerprint fingerprint, Problem refusal,
            String detail, boolean unread) {
        FingerprintedRequest(HttpServletRequest request, Fingerprint fingerprint, Problem refusal, String detail) {
            this(request, fingerprint, refusal, detail, false);
        }

        static FingerprintedRequest refused(Problem problem, String detail) {
            return new FingerprintedRequest(null, null, problem, detail);
        }
    }

    private FingerprintedRequest fingerprint(HttpServletRequest request, String path, IdempotentRoute route)
            throws IOException {
        int max = config.maxRequestBytes();
        long declared = request.getContentLengthLong();
        if (declared > max) {
            return new FingerprintedRequest(null, null, Problem.PAYLOAD_TOO_LARGE,
                    "the body must have at most " + max + " bytes, but had " + declared, true);
        }
        String contentType = request.getContentType();
        // The normalised path: the same request spelled /p%61yments or /payments;x is the same intent.
        if (HttpForms.isUrlEncoded(contentType) && !config.rawFormBodies()) {
            // The container parses a POST's form body itself from the stream: fingerprint the parsed form
            // (sorted) and leave the stream to it, so getParameter() keeps working for the handler.
            // A chunked body declares no length: bound it by what it provably held.
            if (!isSupportedCharset(request.getCharacterEncoding())) {
                // The container skips a form body whose charset it cannot decode, and the handler would run
                // on a body nobody read: neither fingerprinted nor known to be whole.
                return FingerprintedRequest.refused(Problem.MALFORMED_FORM, "the form body's charset is not one "
                        + "this server can decode");
            }
            Map<String, String[]> form;
            try {
                form = request.getParameterMap();
            } catch (IllegalStateException e) {
                // Servlet 6.1: parsing failed (bad %nn, bytes invalid in the charset, a container
                // limit, a body cut short). The container's message quotes the body: not repeated.
                return FingerprintedRequest.refused(Problem.MALFORMED_FORM, "the form body could not be parsed: "
                        + "invalid percent-encoding, bytes invalid in its charset, too many parameters, or cut short");
            }
            if ("POST".equals(request.getMethod()) || holdsBodyFields(form, request.getQueryString())) {
                if (formBodyAtLeast(form, request.getQueryString()) > max) {
                    return FingerprintedRequest.refused(Problem.PAYLOAD_TOO_LARGE,
                            "the body must have at most " + max + " bytes");
                }
                return new FingerprintedRequest(request, HttpSemantics.fingerprint(route.route(), request.getMethod(),
                        path, request.getQueryString(), headerValues(request), contentType, formBytes(form)), null, null);
            }
            // Containers parse forms for POST only, and nothing before the filter parsed this one (as Spring's
            // FormContentFilter does for PUT, PATCH and DELETE): its bytes are the handler's, read below.
        }
        if (MultipartBody.isMultipart(contentType)) {
            MultipartBody.Read read = MultipartBody.read(request, max);
            if (read instanceof MultipartBody.Parts parts) {
                // The container keeps the parts for the handler; the boundary is left out of the content type.
                return new FingerprintedRequest(request, HttpSemantics.fingerprint(route.route(),
                        request.getMethod(), path, request.getQueryString(), headerValues(request),
                        MultipartBody.MEDIA_TYPE, parts.canonical()), null, null);
            } else if (read instanceof MultipartBody.TooLarge) {
                return FingerprintedRequest.refused(Problem.PAYLOAD_TOO_LARGE, "the multipart body must have at most "
                        + max + " bytes, and stay within the server's limits for parts");
            } else if (read instanceof MultipartBody.Malformed) {
                return FingerprintedRequest.refused(Problem.MALFORMED_FORM, "the multipart body could not be parsed");
            }
            // NotParsed: the handler reads the raw body itself; fingerprint it as it is.
        }
        byte[] body;
        try (InputStream in = request.getInputStream()) {
            body = readBody(in, declared, max);
        } catch (IOException e) {
            // The connection ended (or timed out) before the body did: a request that cannot be
            // fingerprinted must not run, and it is the client's, not a server failure.
            return FingerprintedRequest.refused(Problem.INCOMPLETE_BODY, "the request body could not be read to its "
                    + "end" + (declared >= 0 ? " (Content-Length: " + declared + ")" : "") + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
        }
        if (body.length > max) {
            return FingerprintedRequest.refused(Problem.PAYLOAD_TOO_LARGE, "the body must have at most " + max + " bytes");
        }
        byte[] content;
        try {
            // The handler reads a form's bytes (rawFormBodies): its fields are parsed from them, as a container
            // parses them, so that the fingerprint is the one the parameters would give.
            content = HttpForms.fingerprinted(request.getQueryString(), body, contentType);
        } catch (MalformedFormException e) {
            return FingerprintedRequest.refused(Problem.MALFORMED_FORM, e.getMessage());
        }
        try {
            return new FingerprintedRequest(new BufferedRequest(request, body),
                    HttpSemantics.fingerprint(route.route(), request.getMethod(), path,
                            request.getQueryString(), headerValues(request), contentType, content), null, null);
        } catch (MalformedJsonException e) {
            return FingerprintedRequest.refused(Problem.MALFORMED_JSON, e.getMessage());
        }
    }


    /** A request header's field values in order, for the route's fingerprinted headers. */
    private static Function<String, List<String>> headerValues(HttpServletRequest request) {
        return name -> Collections.list(request.getHeaders(name));
    }

    /**
     * The body: its declared length when it has one (at most {@code max}, checked before), else at most
     * {@code max + 1} bytes, one more than allowed saying it is too long. A declared length sizes the array:
     * {@code readNBytes(int)} reads into 8 KiB chunks and copies them, however short the body.
     */
    private static byte[] readBody(InputStream in, long declared, int max) throws IOException {
        if (declared < 0) {
            return in.readNBytes(max + 1);
        }
        byte[] body = new byte[(int) declared];
        int read = in.readNBytes(body, 0, body.length);
        return read == body.length ? body : Arrays.copyOf(body, read);
    }

    /** No declared charset is the container's default; a declared one must be known to this JVM. */
    private static boolean isSupportedCharset(String charset) {
        if (charset == null) {
            return true;
        }
        try {
            return Charset.isSupported(charset);
        } catch (IllegalCharsetNameException e) {
            return false;
        }
    }

    /**
     * A lower bound of the form body's length in bytes: a decoded name or value never has more characters
     * than its encoding has bytes, fields are joined by '&', and the query string's fields are in the
     * parameters too, so its length (and its joining '&') is taken off.
     */
    private static long formBodyAtLeast(Map<String, String[]> form, String query) {
        long length = -1;
        for (Map.Entry<String, String[]> e : form.entrySet()) {
            for (String v : e.getValue()) {
                length += e.getKey().length() + v.length() + 1;
            }
        }
        return length - (query == null ? 0 : query.length() + 1);
    }

    /** Whether {@code form} holds fields beyond the query's: the body was parsed into the parameters. */
    private static boolean holdsBodyFields(Map<String, String[]> form, String query) {
        try {
            return !Arrays.equals(formBytes(form), HttpForms.canonical(HttpForms.parse(query, new byte[0], null)));
        } catch (MalformedFormException e) {
            return false;
        }
    }

    /** The container's parameters as the shared canonical form of fields takes them. */
    private static byte[] formBytes(Map<String, String[]> form) {
        Map<String, List<String>> fields = new LinkedHashMap<>();
        form.forEach((name, values) -> fields.put(name, List.of(values)));
        return HttpForms.canonical(fields);
    }

    private static RuntimeException rethrow(Throwable cause) throws IOException, ServletException {
        if (cause instanceof Error error) {
            throw error;
        }
        if (cause instanceof IOException io) {
            throw io;
        }
        if (cause instanceof ServletException se) {
            throw se;
        }
        if (cause instanceof RuntimeException re) {
            return re;
        }
        return new IllegalStateException(cause);
    }
}
