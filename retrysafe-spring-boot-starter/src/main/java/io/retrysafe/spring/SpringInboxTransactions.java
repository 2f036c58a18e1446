package io.retrysafe.spring;

import io.retrysafe.inbox.InboxTransactions;
import io.retrysafe.jdbc.TransactionalRetrySafe;
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

/**
 * The inbox's attempts in transactions of the application's transaction manager: each attempt
 * begins a new transaction ({@code REQUIRES_NEW}), claims the message id on its connection
 * ({@link TransactionalRetrySafe#join}), runs the listener inside it (its {@code JdbcTemplate}, JPA or
 * {@code @Transactional} writes join), and commits before the inbox answers.
 */
final class SpringInboxTransactions {
    private SpringInboxTransactions() {
    }

    static InboxTransactions of(PlatformTransactionManager manager, DataSource dataSource) {
        return (transactional, key, fingerprint, codec, work) -> {
            DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
                    TransactionDefinition.PROPAGATION_REQUIRES_NEW);
            definition.setName("retrysafe " + key.scope());
            TransactionStatus status;
            Connection connection;
            try {
                status = manager.getTransaction(definition);
            } catch (TransactionException e) {
                throw new SQLException("could not begin a transaction: " + e.getMessage(), e);
            }
            TransactionalRetrySafe.Joined<String> joined;
            try {
                connection = DataSourceUtils.getConnection(dataSource);
                joined = transactional.join(connection, key, fingerprint, codec, attempt -> work.run(connection));
            } catch (CannotGetJdbcConnectionException e) {
                manager.rollback(status);
                throw new SQLException("no database connection: " + e.getMessage(), e);
            } catch (RuntimeException | Error e) {
                manager.rollback(status);
                throw e;
            }
            if (!joined.commit()) {
                // Replays and refusals wrote nothing.
                manager.rollback(status);
                return joined.outcome();
            }
            try {
                manager.commit(status);
            } catch (RuntimeException e) {
                throw joined.commitFailed(e);
            }
            joined.committed();
            return joined.outcome();
        };
    }
}
