package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.servlet.IdempotentExecutor;
import jakarta.servlet.http.HttpServletRequest;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;

/** The filter's executor, each request observed ({@link RetrySafeObservations}) from its claim to its durable outcome. */
final class ObservedExecutor implements IdempotentExecutor {
    static final String KIND = "http";

    private final IdempotentExecutor executor;
    private final RetrySafeObservations observations;

    ObservedExecutor(IdempotentExecutor executor, RetrySafeObservations observations) {
        this.executor = executor;
        this.observations = observations;
    }

    @Override
    public boolean isAsyncSupported() {
        return executor.isAsyncSupported();
    }

    @Override
    public boolean isAsyncSupported(HttpServletRequest request) {
        return executor.isAsyncSupported(request);
    }

    /** An asynchronous handler's observation ends when its outcome is durable, on the thread that completes it. */
    @Override
    public CompletionStage<Outcome<StoredResponse>> executeAsync(HttpServletRequest request, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Operation<? extends CompletionStage<StoredResponse>> handler) {
        RetrySafeObservations.Observed observed = observations.start(KIND, KIND + " " + request.getMethod(), true);
        observed.key(key);
        CompletionStage<Outcome<StoredResponse>> outcome;
        try {
            outcome = executor.executeAsync(request, key, fingerprint, policy, handler);
        } catch (RuntimeException | Error e) {
            end(observed, null, e);
            throw e;
        }
        // This thread keeps no trace of the call; the one that completes it (maybe this one, at once) ends it.
        observed.leaveThread();
        return outcome.whenComplete((done, failure) -> end(observed, done, failure));
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        RetrySafeObservations.Observed observed = observations.start(KIND, KIND + " " + request.getMethod(), true);
        observed.key(key);
        Outcome<StoredResponse> outcome;
        try {
            outcome = executor.execute(request, key, fingerprint, policy, handler);
        } catch (RuntimeException | Error e) {
            end(observed, null, e);
            throw e;
        }
        end(observed, outcome, null);
        return outcome;
    }

    /** Records how the call ended, {@code outcome} or {@code failure}, and ends its observation. */
    private static void end(RetrySafeObservations.Observed observed, Outcome<StoredResponse> outcome, Throwable failure) {
        try {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            if (cause instanceof StoreUnavailableException) {
                // The handler ran, and its outcome did not become durable: answered 503.
                observed.outcome(RetrySafeObservations.STORE_UNAVAILABLE);
            } else if (cause != null) {
                observed.error(cause);
            } else {
                observed.outcome(outcome);
            }
        } finally {
            observed.close();
        }
    }
}
