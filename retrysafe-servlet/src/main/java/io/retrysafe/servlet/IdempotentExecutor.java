package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import jakarta.servlet.http.HttpServletRequest;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;

/**
 * How the filter runs a request under its key: in standalone mode on an engine, or inside a
 * database transaction that the handler's writes join (the Spring Boot starter provides one on
 * the application's transaction manager; {@link JdbcTransactionalExecutor} is the plain-JDBC one).
 * An implementation returns only after the outcome is durable: a failed commit must throw, never
 * return a success.
 */
@FunctionalInterface
public interface IdempotentExecutor {

    /** @param policy the route's policy, or null for the engine's default */
    Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler);

    /**
     * Runs a handler that may finish after the request thread returns (an asynchronous servlet or Spring MVC
     * handler): the returned stage completes once the outcome is durable, or fails as {@link #execute} throws.
     * The default is for executors whose database transaction cannot outlive the request thread: a handler
     * that goes asynchronous is refused with {@link AsyncHandlerRefusedException}, its key released and its
     * transaction rolled back.
     */
    default CompletionStage<Outcome<StoredResponse>> executeAsync(HttpServletRequest request, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Operation<? extends CompletionStage<StoredResponse>> handler) {
        try {
            return CompletableFuture.completedFuture(execute(request, key, fingerprint, policy, attempt -> {
                CompletableFuture<StoredResponse> stage = handler.run(attempt).toCompletableFuture();
                if (!stage.isDone()) {
                    throw new AsyncHandlerRefusedException("the handler went asynchronous, and this executor's "
                            + "transaction cannot outlive the request thread; use standalone mode for this route");
                }
                return resultOf(stage);
            }));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Whether {@link #executeAsync} records a handler that finishes after the request thread returns. */
    default boolean isAsyncSupported() {
        return false;
    }

    /**
     * The same for one request, for an executor that runs some routes in another mode than the rest; the filter
     * asks this one.
     */
    default boolean isAsyncSupported(HttpServletRequest request) {
        return isAsyncSupported();
    }

    /**
     * Standalone mode: the claim commits before the handler runs, the response after. A duplicate of a
     * request in flight on this instance waits for it in memory (up to the policy's wait for result);
     * an asynchronous handler's duplicates are decided by the store, which answers them without waiting.
     */
    static IdempotentExecutor standalone(RetrySafe engine) {
        Require.notNull(engine, "engine");
        return new IdempotentExecutor() {
            @Override
            public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key,
                    Fingerprint fingerprint, OperationPolicy policy, Operation<StoredResponse> handler) {
                RetrySafe e = policy == null ? engine : engine.with(policy);
                return e.oncePerInstance(key, fingerprint, e.policy().waitForResult(), ResponseCodec.identity(),
                        () -> e.execute(key, fingerprint, ResponseCodec.identity(), handler));
            }

            @Override
            public CompletionStage<Outcome<StoredResponse>> executeAsync(HttpServletRequest request,
                    IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy,
                    Operation<? extends CompletionStage<StoredResponse>> handler) {
                return (policy == null ? engine : engine.with(policy))
                        .executeAsync(key, fingerprint, ResponseCodec.identity(), handler);
            }

            @Override
            public boolean isAsyncSupported() {
                return true;
            }
        };
    }

    /** The value of a completed stage; its failure rethrown as itself (not wrapped) so the engine sees the handler's. */
    static <T> T resultOf(CompletableFuture<T> done) throws Exception {
        try {
            return done.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception ex) {
                throw ex;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }
}
