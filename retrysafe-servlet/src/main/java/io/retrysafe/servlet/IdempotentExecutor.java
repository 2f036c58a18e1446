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

    /** Standalone mode: the claim commits before the handler runs, the response after. */
    static IdempotentExecutor standalone(RetrySafe engine) {
        Require.notNull(engine, "engine");
        return (request, key, fingerprint, policy, handler) -> (policy == null ? engine : engine.with(policy))
                .execute(key, fingerprint, ResponseCodec.identity(), handler);
    }
}
