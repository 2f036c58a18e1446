package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.IdempotentExecutor;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Transactional mode on the application's transaction manager: the filter opens the transaction,
 * the claim is its first statement, the handler's writes (JdbcTemplate, JPA, any
 * {@code @Transactional} code that joins) go into it, and the response is written into it before
 * the manager commits. The response reaches the client only after that commit: a failed commit is a
 * {@link StoreUnavailableException} (503), never the handler's success.
 */
final class SpringTransactionalExecutor implements IdempotentExecutor {
    private static final System.Logger LOG = System.getLogger(SpringTransactionalExecutor.class.getName());

    private final PlatformTransactionManager transactionManager;
    private final DataSource dataSource;
    private final TransactionalRetrySafe transactional;

    SpringTransactionalExecutor(PlatformTransactionManager transactionManager, DataSource dataSource,
            TransactionalRetrySafe transactional) {
        this.transactionManager = transactionManager;
        this.dataSource = dataSource;
        this.transactional = transactional;
    }

    @Override
    public Outcome<StoredResponse> execute(HttpServletRequest request, IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<StoredResponse> handler) {
        TransactionalRetrySafe tx = policy == null ? transactional : transactional.with(policy);
        Supplier<Outcome<StoredResponse>> work = () -> executeInTransaction(tx, key, fingerprint, handler);
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            // The filter will join a transaction that commits after it returns: its answer is not durable
            // yet, so the duplicates waiting for it must ask the store, which waits for that commit.
            return tx.oncePerInstance(key, fingerprint, work);
        }
        // The filter's own transaction, committed before it returns: its duplicates may be given the answer.
        return tx.oncePerInstance(key, fingerprint, ResponseCodec.identity(), work);
    }

    private Outcome<StoredResponse> executeInTransaction(TransactionalRetrySafe tx, IdempotencyKey key,
            Fingerprint fingerprint, Operation<StoredResponse> handler) {
        DefaultTransactionDefinition definition = new DefaultTransactionDefinition();
        definition.setName("retrysafe " + key.scope());
        TransactionalRetrySafe.Joined<StoredResponse> rolledBack = null;
        while (true) {
            TransactionStatus status;
            try {
                status = transactionManager.getTransaction(definition);
            } catch (TransactionException e) {
                // No connection, no transaction: fail closed before the handler runs, as the engine does.
                Outcome<StoredResponse> unavailable = new Outcome.StoreUnavailable<>(new StoreUnavailableException(
                        tx.engine().store().name(), tx.engine().policy().retryAfter(),
                        "the transaction of key " + key.digest() + " could not begin: " + e.getMessage(), e));
                tx.engine().listener().onOutcome(key, unavailable);
                return unavailable;
            }
            TransactionalRetrySafe.Joined<StoredResponse> joined;
            try {
                Connection connection = DataSourceUtils.getConnection(dataSource);
                // A transaction begun here has nothing in it yet: the claim needs no savepoint, and the handler
                // may run again in a new one. One the filter joined (an enclosing transaction on this thread)
                // may hold writes the savepoint keeps.
                joined = rolledBack != null ? rolledBack.runAgain(connection)
                        : status.isNewTransaction()
                        ? tx.joinNewOrRunAgain(connection, key, fingerprint, ResponseCodec.identity(), handler)
                        : tx.join(connection, key, fingerprint, ResponseCodec.identity(), handler);
            } catch (RuntimeException | Error e) {
                rollback(status, key, e);
                throw e;
            }
            if (joined.mustRunAgain()) {
                // Key last without a look-up met a record that a claim takes over: this run is not kept, and
                // the handler runs again in a new transaction, with the key claimed first.
                rollback(status, key, null);
                rolledBack = joined;
                continue;
            }
            if (!joined.commit()) {
                // Replays and refusals wrote nothing; a released result's writes must not commit.
                rollback(status, key, null);
                return joined.outcome();
            }
            try {
                transactionManager.commit(status);
            } catch (RuntimeException e) {
                // A TransactionException, or a DataAccessException from a translating manager (Boot's
                // JdbcTransactionManager: a deferred constraint violated at commit is a DuplicateKeyException).
                throw joined.commitFailed(e);
            }
            joined.committed();
            return joined.outcome();
        }
    }

    /**
     * Rolls back, and never lets a failed rollback replace the answer: when the connection is lost
     * (the database restarted, the network cut it), the claim fails with it and so does the
     * rollback, but the server has already discarded the transaction, and the client must get the
     * claim's 503 with {@code Retry-After} (or the handler's own failure), not a 500 about the
     * rollback.
     */
    private void rollback(TransactionStatus status, IdempotencyKey key, Throwable failure) {
        try {
            transactionManager.rollback(status);
        } catch (RuntimeException e) {
            if (failure != null) {
                failure.addSuppressed(e);
            } else {
                LOG.log(Level.WARNING, () -> "rollback of the transaction of key " + key.digest() + " failed"
                        + " (the database discards it with its connection): " + e);
            }
        }
    }
}
