package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.inbox.InboxTransactions;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The inbox's attempts in transactions of the application's {@link PlatformTransactionManager}, so
 * that the listener's {@code JdbcTemplate}, JPA and {@code @Transactional} writes join them.
 * {@link #ownTransaction}: each attempt begins a new transaction and commits it before it returns
 * (a record). {@link #joinTransaction}: each attempt writes into the transaction already active on
 * the thread, which its caller commits or rolls back (the records of a batch, claimed in one
 * transaction); the engine's listener hears each outcome once that transaction ended.
 */
final class SpringInboxTransactions implements InboxTransactions {
    private final PlatformTransactionManager transactionManager;
    private final DataSource dataSource;
    private final boolean own;

    private SpringInboxTransactions(PlatformTransactionManager transactionManager, DataSource dataSource,
            boolean own) {
        this.transactionManager = transactionManager;
        this.dataSource = dataSource;
        this.own = own;
    }

    static SpringInboxTransactions ownTransaction(PlatformTransactionManager transactionManager, DataSource dataSource) {
        return new SpringInboxTransactions(transactionManager, dataSource, true);
    }

    static SpringInboxTransactions joinTransaction(PlatformTransactionManager transactionManager,
            DataSource dataSource) {
        return new SpringInboxTransactions(transactionManager, dataSource, false);
    }

    /** A new transaction of the application's transaction manager, named after the key's scope. */
    static TransactionDefinition definition(String scope) {
        DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
                TransactionDefinition.PROPAGATION_REQUIRES_NEW);
        definition.setName("retrysafe " + scope);
        return definition;
    }

    @Override
    public Outcome<String> execute(TransactionalRetrySafe transactional, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<String> codec, Work work) throws SQLException {
        if (!own) {
            TransactionalRetrySafe.Joined<String> joined = join(transactional, key, fingerprint, codec, work);
            if (joined.commit()) {
                TransactionSynchronizationManager.registerSynchronization(new Report(joined));
            }
            return joined.outcome();
        }
        TransactionStatus status;
        try {
            status = transactionManager.getTransaction(definition(key.scope()));
        } catch (TransactionException e) {
            throw new SQLException("could not begin a transaction: " + e.getMessage(), e); // nothing ran
        }
        TransactionalRetrySafe.Joined<String> joined;
        try {
            joined = join(transactional, key, fingerprint, codec, work);
        } catch (SQLException | RuntimeException | Error e) {
            transactionManager.rollback(status);
            throw e;
        }
        if (!joined.commit()) {
            transactionManager.rollback(status); // replays and refusals wrote nothing
            return joined.outcome();
        }
        try {
            transactionManager.commit(status);
        } catch (RuntimeException e) {
            throw joined.commitFailed(e); // nothing of the work was kept
        }
        joined.committed();
        return joined.outcome();
    }

    private TransactionalRetrySafe.Joined<String> join(TransactionalRetrySafe transactional, IdempotencyKey key,
            Fingerprint fingerprint, ResponseCodec<String> codec, Work work) throws SQLException {
        Connection connection;
        try {
            connection = DataSourceUtils.getConnection(dataSource);
        } catch (CannotGetJdbcConnectionException e) {
            // The database's failure, not the listener's: the inbox retries it later instead of counting an attempt.
            throw new SQLException("no database connection: " + e.getMessage(), e);
        }
        return transactional.join(connection, key, fingerprint, codec, attempt -> work.run(connection));
    }

    /** Tells the engine what became of a joined attempt once its caller's transaction ended. */
    private record Report(TransactionalRetrySafe.Joined<String> joined) implements TransactionSynchronization {
        @Override
        public void afterCompletion(int status) {
            if (status == STATUS_COMMITTED) {
                joined.committed();
            } else if (status == STATUS_ROLLED_BACK) {
                joined.rolledBack();
            } else {
                joined.commitFailed(new IllegalStateException("the transaction's commit failed or its outcome is "
                        + "unknown"));
            }
        }
    }
}
