package io.retrysafe.gateway;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.servlet.HttpIdempotency;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.eclipse.jetty.client.BytesRequestContent;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Promise;

/**
 * The gateway's first handler, run by the thread that read the request, a selector's: a request no route protects,
 * with no body or one of declared length up to {@link #MAX_BODY_BYTES} bytes, is decided, read and sent from
 * here, and its answer is written by the client's thread that received it. No request thread, servlet or hand-off
 * between threads takes part: the hand-offs were most of what the gateway cost over a plain reverse proxy. A
 * protected request is taken the same way ({@link NonBlockingRoute}): on Redis no thread waits for the store, on a
 * store whose calls block a pool thread runs each call ({@link StoreOnThreads}).
 *
 * <p>Everything else goes on, on a request thread, to the servlets and their blocking path: a protected request
 * the non-blocking path does not take, a refusal (with the edge's decision, made once), a body that is chunked or
 * larger, the admin port. A caller whose check
 * may wait (a password not checked yet, a token) is decided on a request thread too, and forwarded from there when no
 * route protects it: a selector never waits.
 */
final class NonBlockingForwarder extends Handler.Wrapper {
    /** The largest request body read here, without a thread; a larger one is read by a request thread. */
    static final int MAX_BODY_BYTES = 64 * 1024;
    private static final System.Logger LOG = System.getLogger(NonBlockingForwarder.class.getName());

    private final Routes routes;
    private final HttpClient client;
    private final Deadlines deadlines;
    private final AccessLog accessLog;
    private final Duration retryAfter;
    private final String callerHeader;

    NonBlockingForwarder(Handler servlets, Routes routes, HttpClient client, Deadlines deadlines,
            AccessLog accessLog, Duration retryAfter, String callerHeader) {
        super(servlets);
        this.routes = routes;
        this.client = client;
        this.deadlines = deadlines;
        this.accessLog = accessLog;
        this.retryAfter = retryAfter;
        this.callerHeader = callerHeader;
    }

    /** What lets the server call {@link #handle} on the selector's thread; whatever may block is handed on. */
    @Override
    public InvocationType getInvocationType() {
        return InvocationType.NON_BLOCKING;
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) {
        long start = System.nanoTime();
        if (!"proxy".equals(request.getConnectionMetaData().getConnector().getName())) {
            return toServlets(request, response, callback);
        }
        HttpFields headers = request.getHeaders();
        long length = headers.getLongField(HttpHeader.CONTENT_LENGTH);
        if (headers.contains(HttpHeader.TRANSFER_ENCODING) || length > MAX_BODY_BYTES) {
            return toServlets(request, response, callback);
        }
        Routes.Decision decision = routes.decide(request.getMethod(), request.getHttpURI().getPath(), headers::get,
                false);
        if (decision instanceof Routes.Waits) {
            // A password to check or a key to fetch: decided on a thread that may wait for it.
            request.getContext().execute(() -> decided(request, response, callback, start, length,
                    routes.decide(request.getMethod(), request.getHttpURI().getPath(), headers::get, true), true));
            return true;
        }
        decided(request, response, callback, start, length, decision, false);
        return true;
    }

    /** @param onRequestThread whether this thread may block, and so run the servlets itself */
    private void decided(Request request, Response response, Callback callback, long start, long length,
            Routes.Decision decision, boolean onRequestThread) {
        if (decision instanceof Routes.Forward forward) {
            Callback logged = Callback.from(callback, () -> accessLog.log(Request.getRemoteAddr(request),
                    request.getMethod(), request.getHttpURI().getPath(), response.getStatus(), start,
                    request.getHeaders().get(HttpIdempotency.HEADER),
                    "true".equals(response.getHeaders().get(HttpSemantics.REPLAYED_HEADER))));
            if (forward.route() == null) {
                if (length <= 0) {
                    send(request, response, logged, forward, null);
                } else {
                    read(request, response, logged, length, false,
                            body -> send(request, response, logged, forward, body),
                            logged::failed); // the client's body broke off: nobody is left to answer
                }
                return;
            }
            if (protect(request, response, logged, forward, length)) {
                return;
            }
        }
        request.setAttribute(Routes.DECISION, decision);
        if (onRequestThread) {
            servlets(request, response, callback);
        } else {
            toServlets(request, response, callback);
        }
    }

    /**
     * A protected request, on the non-blocking path when the request is one it takes ({@link NonBlockingRoute#key});
     * false when it goes on to the servlet filter instead.
     */
    private boolean protect(Request request, Response response, Callback callback, Routes.Forward forward,
            long length) {
        NonBlockingRoute route = forward.route().nonBlocking();
        IdempotencyKey key = route.key(request.getHeaders(), forward, length);
        if (key == null) {
            return false;
        }
        Consumer<byte[]> run = body -> route.run(request, response, callback, forward, key,
                body == null ? new byte[0] : body, attempt -> new HeldAnswer(response,
                        upstream(request, forward, body, attempt.number()), forward.target(),
                        route.maxResponseBytes(), route.replayedHeaders(), retryAfter), deadlines);
        if (length <= 0) {
            // A declared length of 0 is sent as such; none is sent with none.
            run.accept(length == 0 ? new byte[0] : null);
            return true;
        }
        read(request, response, callback, length, true, run, x -> {
            // As the servlet filter answers it: a request that cannot be fingerprinted does not run.
            response.getHeaders().put(HttpHeader.CONNECTION, "close");
            write(response, callback, ProblemType.INCOMPLETE_BODY.answer("the request body could not be read to its "
                    + "end (Content-Length: " + length + "): " + (x.getMessage() == null
                            ? x.getClass().getSimpleName() : x.getMessage()), null, null));
        });
        return true;
    }

    /** On a request thread: the servlets may block. */
    private boolean toServlets(Request request, Response response, Callback callback) {
        request.getContext().execute(() -> servlets(request, response, callback));
        return true;
    }

    private void servlets(Request request, Response response, Callback callback) {
        try {
            if (!super.handle(request, response, callback)) {
                Response.writeError(request, response, callback, HttpStatus.NOT_FOUND_404);
            }
        } catch (Throwable x) {
            Response.writeError(request, response, callback, x);
        }
    }

    /**
     * Reads the body without a thread, then sends it. A body that has not arrived when the minimum rate says it should
     * have (past the grace period) is answered as on the blocking path ({@link #slowBody}), and the connection closed.
     */
    private void read(Request request, Response response, Callback callback, long length, boolean protectedRoute,
            Consumer<byte[]> then, Consumer<Throwable> broke) {
        AtomicBoolean answered = new AtomicBoolean();
        long rate = routes.minRequestDataRate();
        Deadlines.Pending deadline = rate <= 0 ? null : deadlines.start(Duration.ofMillis(
                ForwardedRequest.RATE_GRACE_MILLIS + length * 1000 / rate), () -> {
                    if (answered.compareAndSet(false, true)) {
                        response.getHeaders().put(HttpHeader.CONNECTION, "close");
                        write(response, callback, slowBody(rate, length, protectedRoute));
                    }
                });
        Content.Source.asByteArrayAsync(request, (int) length, new Promise.Invocable<byte[]>() {
            @Override
            public void succeeded(byte[] body) {
                if (answered.compareAndSet(false, true)) {
                    if (deadline != null) {
                        deadline.cancel();
                    }
                    then.accept(body);
                }
            }

            @Override
            public void failed(Throwable x) {
                if (answered.compareAndSet(false, true)) {
                    if (deadline != null) {
                        deadline.cancel();
                    }
                    broke.accept(x);
                }
            }

            @Override
            public InvocationType getInvocationType() {
                return InvocationType.NON_BLOCKING;
            }
        });
    }

    /**
     * A body cut off for arriving slower than the minimum rate: on a protected route it is incomplete, as the servlet
     * filter answers a body it could not read to its end (it cannot be fingerprinted, and the key is not claimed);
     * elsewhere {@code 408}.
     */
    private static HttpAnswer slowBody(long rate, long length, boolean protectedRoute) {
        String detail = "the body of " + length + " bytes arrived slower than " + rate + " bytes a second";
        if (protectedRoute) {
            return ProblemType.INCOMPLETE_BODY.answer("the request body could not be read to its end: " + detail, null,
                    null);
        }
        return new HttpAnswer(HttpStatus.REQUEST_TIMEOUT_408, Map.of("Content-Type", List.of(ProblemType.CONTENT_TYPE)),
                EdgeProblems.body(HttpStatus.REQUEST_TIMEOUT_408, detail));
    }

    private void send(Request request, Response response, Callback callback, Routes.Forward forward, byte[] body) {
        new Answer(response, callback, upstream(request, forward, body, null), forward.target()).send(deadlines);
    }

    /** The request to the upstream, not sent yet; {@code attempt} is null when no route protects it. */
    private org.eclipse.jetty.client.Request upstream(Request request, Routes.Forward forward, byte[] body,
            Integer attempt) {
        Routes.Target target = forward.target();
        HttpFields headers = request.getHeaders();
        org.eclipse.jetty.client.Request upstream = client.newRequest(Forwarder.uri(target.upstream(),
                forward.path(), request.getHttpURI().getQuery())).method(forward.method())
                .idleTimeout(target.responseTimeout().toMillis(), TimeUnit.MILLISECONDS);
        upstream.headers(h -> {
            for (HttpField field : headers) {
                if (Forwarder.forwards(field.getName(), callerHeader)) {
                    h.add(field.getName(), field.getValue());
                }
            }
            Forwarder.addProxyHeaders(h, Request.getRemoteAddr(request), headers.get("X-Forwarded-For"),
                    request.getHttpURI().getScheme(), headers.get(HttpHeader.HOST), attempt, forward.caller(),
                    callerHeader);
        });
        if (body != null) {
            upstream.body(new BytesRequestContent(headers.get(HttpHeader.CONTENT_TYPE), body));
        }
        return upstream;
    }

    static void write(Response response, Callback callback, HttpAnswer answer) {
        response.setStatus(answer.status());
        for (Map.Entry<String, List<String>> header : answer.headers().entrySet()) {
            for (String value : header.getValue()) {
                response.getHeaders().add(header.getKey(), value);
            }
        }
        response.getHeaders().put(HttpHeader.CONTENT_LENGTH, answer.body().length);
        response.write(true, ByteBuffer.wrap(answer.body()), callback);
    }

    /** The status and headers of the upstream's answer, less the connection's and the upstream server's own. */
    static void copyHeaders(org.eclipse.jetty.client.Response answer, Response response) {
        response.setStatus(answer.getStatus());
        for (HttpField field : answer.getHeaders()) {
            if (Forwarder.passesBack(field.getLowerCaseName())) {
                response.getHeaders().add(field);
            }
        }
    }

    /**
     * The upstream's answer to a request no route protects, as {@link UpstreamAnswer} takes it on the servlets' path:
     * of known length up to {@link CollectedBody#MAX_BYTES}, collected and written whole; larger or of unknown length,
     * written chunk by chunk as it arrives. Written as soon as it ends: there is nothing to record.
     */
    private final class Answer extends NonBlockingAnswer {
        private final Callback callback;

        Answer(Response response, Callback callback, org.eclipse.jetty.client.Request upstream, Routes.Target target) {
            super(response, upstream, target, CollectedBody.MAX_BYTES, false);
            this.callback = callback;
        }

        @Override
        void ended() {
            write(callback);
        }

        @Override
        void failed(Throwable cause, boolean reached) {
            if (isCommitted()) {
                // Part of a streamed answer is out: the client's connection is cut, so that it sees it cut short.
                callback.failed(cause);
                return;
            }
            Response response = response();
            response.reset();
            if (!reached) {
                LOG.log(Level.WARNING, () -> "upstream " + target().upstream() + " not reached: " + cause);
                NonBlockingForwarder.write(response, callback, ProblemType.UPSTREAM_UNAVAILABLE.answer(Forwarder.NOT_REACHED, null,
                        retryAfter));
                return;
            }
            LOG.log(Level.WARNING, () -> "upstream " + target().upstream() + " got the request and did not answer: "
                    + cause);
            NonBlockingForwarder.write(response, callback, ProblemType.OUTCOME_UNKNOWN.answer(Forwarder.NO_ANSWER, null, null));
        }
    }
}
