package io.retrysafe.grpc;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationFailedException;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseUnreadableException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/**
 * One protected unary call: the request is read whole, then the engine decides; when it runs the handler, the
 * handler answers a capturing call, and what it sent reaches the client only once its outcome is recorded.
 * gRPC calls a listener's methods one at a time; the answer is sent from whichever thread finished the outcome.
 */
final class ProtectedCall<ReqT, RespT> extends ServerCall.Listener<ReqT> {
    private static final System.Logger LOG = System.getLogger(RetrySafeServerInterceptor.class.getName());

    private final ServerCall<ReqT, RespT> call;
    private final Metadata headers;
    private final ServerCallHandler<ReqT, RespT> next;
    private final IdempotencyKey key;
    private final RetrySafe engine;
    private ReqT request;
    private boolean refused;
    /** The handler's listener, once it runs. */
    private volatile ServerCall.Listener<ReqT> handler;
    /** What the handler answered, once it runs. */
    private volatile Capture capture;

    ProtectedCall(ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next,
            IdempotencyKey key, RetrySafe engine) {
        this.call = call;
        this.headers = headers;
        this.next = next;
        this.key = key;
        this.engine = engine;
        // Two, as grpc-java's unary handler asks: a second message is a client's mistake, refused.
        call.request(2);
    }

    @Override
    public void onMessage(ReqT message) {
        if (refused) {
            return;
        }
        if (request != null) {
            refused = true;
            call.close(Status.INTERNAL.withDescription("Too many requests"), new Metadata());
            return;
        }
        request = message;
    }

    @Override
    public void onHalfClose() {
        if (refused) {
            return;
        }
        if (request == null) {
            call.close(Status.INTERNAL.withDescription("Half-closed without a request"), new Metadata());
            return;
        }
        CompletionStage<Outcome<StoredResponse>> outcome;
        try {
            outcome = engine.executeAsync(key, RequestFingerprint.of(call.getMethodDescriptor(), request),
                    ResponseCodec.identity(), attempt -> run());
        } catch (RuntimeException e) {
            answerFailure(e);
            return;
        }
        outcome.whenComplete((done, failure) -> {
            try {
                if (failure != null) {
                    answerFailure(failure);
                } else {
                    answer(done);
                }
            } catch (RuntimeException e) {
                // Nothing else would close the call (a stored message the method's marshaller no longer parses):
                // the client must not wait for its deadline.
                LOG.log(Level.WARNING, () -> "key " + key.digest() + ": the answer could not be sent: " + e);
                closeUnlessClosed(Status.INTERNAL.withDescription("the answer could not be sent"));
            }
        });
    }

    private void closeUnlessClosed(Status status) {
        try {
            call.close(status, new Metadata());
        } catch (IllegalStateException alreadyClosed) {
            // The answer went out before the failure.
        }
    }

    /** Runs the handler on a call that captures its answer; the stage completes when the handler closes it. */
    private CompletionStage<StoredResponse> run() {
        Capture capture = new Capture();
        this.capture = capture;
        ServerCall.Listener<ReqT> listener = next.startCall(capture, headers);
        handler = listener;
        listener.onReady();
        listener.onMessage(request);
        listener.onHalfClose();
        return capture.answer;
    }

    @Override
    public void onCancel() {
        ServerCall.Listener<ReqT> h = handler;
        if (h != null) {
            h.onCancel();
        }
    }

    @Override
    public void onComplete() {
        ServerCall.Listener<ReqT> h = handler;
        if (h != null) {
            h.onComplete();
        }
    }

    @Override
    public void onReady() {
        ServerCall.Listener<ReqT> h = handler;
        if (h != null) {
            h.onReady();
        }
    }

    private void answer(Outcome<StoredResponse> outcome) {
        if (outcome instanceof Outcome.Executed<StoredResponse>) {
            send(capture.answered, capture.message);
        } else if (outcome instanceof Outcome.Unprotected<StoredResponse>) {
            send(capture.answered, capture.message);
        } else if (outcome instanceof Outcome.Replayed<StoredResponse> replayed) {
            StoredCall stored = StoredCall.decode(replayed.value());
            stored.trailers().put(GrpcIdempotency.REPLAYED_TRAILER, "true");
            send(stored, stored.message() == null ? null
                    : call.getMethodDescriptor().parseResponse(new ByteArrayInputStream(stored.message())));
        } else if (outcome instanceof Outcome.InProgress<StoredResponse> inProgress) {
            // ABORTED: a concurrency conflict, as the HTTP front doors' 409; the client retries with the same key.
            close(Refusal.retryAfter(Status.Code.ABORTED, "a call with this idempotency key is still being "
                    + "processed; retry with the same key after the delay in RetryInfo", inProgress.retryAfter()));
        } else if (outcome instanceof Outcome.FingerprintMismatch<StoredResponse>) {
            // FAILED_PRECONDITION: the request is refused because of the key's earlier use, not for itself.
            close(Refusal.of(Status.Code.FAILED_PRECONDITION, "this idempotency key was already used with a "
                    + "different request; use a new key for a new intent"));
        } else if (outcome instanceof Outcome.StoreUnavailable<StoredResponse> unavailable) {
            close(Refusal.retryAfter(Status.Code.UNAVAILABLE, "the idempotency store is unavailable; the call was "
                    + "not processed", orDefault(unavailable.retryAfter())));
        }
    }

    private void answerFailure(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause()
                : failure;
        if (cause instanceof OutcomeUnknownException e) {
            LOG.log(Level.WARNING, () -> "key " + key.digest() + ": outcome unknown: " + e.getMessage());
            close(Refusal.retryAfter(Status.Code.UNAVAILABLE, "the call may have been processed, but its outcome "
                    + "is not known: it may have taken effect. A retry with the same key after the delay may "
                    + "process it again", orDefault(e.retryAfter())));
        } else if (cause instanceof StoreUnavailableException e) {
            LOG.log(Level.WARNING, () -> "key " + key.digest() + ": outcome not recorded: " + e.getMessage());
            close(Refusal.retryAfter(Status.Code.UNAVAILABLE, "the call's outcome could not be recorded; it was "
                    + "not kept", orDefault(e.retryAfter())));
        } else if (cause instanceof StoredResponseUnreadableException e) {
            LOG.log(Level.WARNING, () -> "key " + key.digest() + ": " + e.getMessage());
            close(Refusal.of(Status.Code.INTERNAL, "the stored answer for this idempotency key cannot be read"));
        } else {
            // The handler threw: the key is released, and the client gets what grpc-java sends for it.
            Throwable thrown = cause instanceof OperationFailedException && cause.getCause() != null
                    ? cause.getCause() : cause;
            Status status = thrown instanceof StatusRuntimeException || thrown instanceof StatusException
                    ? Status.fromThrowable(thrown)
                    : Status.UNKNOWN.withDescription("Application error processing RPC").withCause(thrown);
            Metadata trailers = Status.trailersFromThrowable(thrown);
            close(new Refusal(status, trailers == null ? new Metadata() : trailers));
        }
    }

    /** The store's delay, else the engine's policy's: the one it tells a duplicate in flight. */
    private Duration orDefault(Duration retryAfter) {
        return retryAfter == null ? engine.policy().retryAfter() : retryAfter;
    }

    private void close(Refusal refusal) {
        call.close(refusal.status(), refusal.trailers());
    }

    /** Sends an answer: the handler's own where it ran here, the stored one (its message parsed) on a replay. */
    private void send(StoredCall answer, RespT message) {
        if (message != null) {
            call.sendHeaders(answer.headers());
            call.sendMessage(message);
        } else if (answer.headers().keys().isEmpty()) {
            // Nothing but a status: a trailers-only answer, as grpc-java sends one.
        } else {
            call.sendHeaders(answer.headers());
        }
        call.close(answer.status(), answer.trailers());
    }

    /** The call the handler answers: what it sends is kept, and sent to the client after the outcome. */
    private final class Capture extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {
        final CompletableFuture<StoredResponse> answer = new CompletableFuture<>();
        private Metadata sentHeaders = new Metadata();
        private volatile RespT message;
        private byte[] bytes;
        /** The handler's answer as it was sent, credentials included: the stored one has them left out. */
        private volatile StoredCall answered;

        Capture() {
            super(call);
        }

        @Override
        public void request(int numMessages) {
            // The request was read before the handler started.
        }

        @Override
        public void sendHeaders(Metadata headers) {
            sentHeaders = headers;
        }

        @Override
        public void sendMessage(RespT response) {
            message = response;
            try (InputStream in = call.getMethodDescriptor().streamResponse(response)) {
                bytes = in.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException("the response message could not be marshalled", e);
            }
        }

        @Override
        public boolean isReady() {
            return true;
        }

        @Override
        public void close(Status status, Metadata trailers) {
            answered = new StoredCall(status, sentHeaders, bytes, trailers);
            answer.complete(answered.encode());
        }
    }
}
