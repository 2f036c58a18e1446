package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.servlet.IdempotentExecutor;
import jakarta.servlet.http.HttpServletRequest;
import java.util.concurrent.CompletionStage;

/**
 * Transactional mode, but for the routes that run in standalone mode all the same (served by asynchronous
 * handlers, {@link AsyncHandlerRoutes}), which run on the same engine and store.
 */
final class RouteModeExecutor implements IdempotentExecutor {
    private final IdempotentExecutor transactional;
    private final IdempotentExecutor standalone;
    private final StandaloneRoutes routes;

    RouteModeExecutor(IdempotentExecutor transactional, IdempotentExecutor standalone, StandaloneRoutes routes) {
        this.transactional = transactional;
        this.standalone = standalone;
        this.routes = routes;
    }

    /** The executor of every route that does not run in standalone mode. */
    IdempotentExecutor transactional() {
        return transactional;
    }

    private IdempotentExecutor of(HttpServletRequest request) {
        return routes.isStandalone(request) ? standalone : transactional;
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        return of(request).execute(request, key, fingerprint, policy, handler);
    }

    @Override
    public CompletionStage<Outcome<StoredResponse>> executeAsync(HttpServletRequest request, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Operation<? extends CompletionStage<StoredResponse>> handler) {
        return of(request).executeAsync(request, key, fingerprint, policy, handler);
    }

    @Override
    public boolean isAsyncSupported() {
        return transactional.isAsyncSupported();
    }

    @Override
    public boolean isAsyncSupported(HttpServletRequest request) {
        return of(request).isAsyncSupported(request);
    }
}
