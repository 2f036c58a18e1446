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
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        try (RetrySafeObservations.Observed observed = observations.start(KIND, KIND + " " + request.getMethod(), true)) {
            observed.key(key);
            try {
                Outcome<StoredResponse> outcome = executor.execute(request, key, fingerprint, policy, handler);
                observed.outcome(outcome);
                return outcome;
            } catch (StoreUnavailableException e) {
                // The handler ran, and its outcome did not become durable: answered 503.
                observed.outcome(RetrySafeObservations.STORE_UNAVAILABLE);
                throw e;
            } catch (RuntimeException | Error e) {
                observed.error(e);
                throw e;
            }
        }
    }
}
