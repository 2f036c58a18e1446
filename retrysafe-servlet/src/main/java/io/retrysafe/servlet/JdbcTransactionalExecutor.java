package io.retrysafe.servlet;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import jakarta.servlet.http.HttpServletRequest;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Transactional mode for a plain servlet application: the filter takes a connection, claims the
 * key on it, and hands it to the handler as the request attribute {@link #CONNECTION_ATTRIBUTE};
 * the handler's writes on it commit together with the key and the stored response, and the
 * response reaches the client only after that commit.
 */
public final class JdbcTransactionalExecutor implements IdempotentExecutor {
    /** The request attribute holding the transaction's {@link Connection} while the handler runs. */
    public static final String CONNECTION_ATTRIBUTE = JdbcTransactionalExecutor.class.getName() + ".connection";

    private final TransactionalRetrySafe transactional;
    private final DataSource dataSource;

    public JdbcTransactionalExecutor(TransactionalRetrySafe transactional, DataSource dataSource) {
        this.transactional = Require.notNull(transactional, "transactional");
        this.dataSource = Require.notNull(dataSource, "dataSource");
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        TransactionalRetrySafe tx = policy == null ? transactional : transactional.with(policy);
        return tx.oncePerInstance(key, fingerprint, ResponseCodec.identity(), () -> executeOnConnection(tx, request, key, fingerprint, handler));
    }

    private Outcome<StoredResponse> executeOnConnection(TransactionalRetrySafe tx, HttpServletRequest request,
            IdempotencyKey key, Fingerprint fingerprint, Operation<StoredResponse> handler) {
        Connection c;
        try {
            c = dataSource.getConnection();
        } catch (SQLException e) {
            return new Outcome.StoreUnavailable<>(new StoreUnavailableException(tx.engine().store().name(),
                    tx.engine().policy().retryAfter(),
                    "could not get a connection: " + e.getMessage(), e));
        }
        request.setAttribute(CONNECTION_ATTRIBUTE, c);
        try {
            return tx.execute(c, key, fingerprint, ResponseCodec.identity(), handler);
        } finally {
            request.removeAttribute(CONNECTION_ATTRIBUTE);
            try {
                c.close();
            } catch (SQLException e) {
                // The outcome is already decided (and committed, or not): a failing close changes nothing of it.
                System.getLogger(JdbcTransactionalExecutor.class.getName()).log(System.Logger.Level.WARNING,
                        "closing the connection failed: " + e);
            }
        }
    }
}
