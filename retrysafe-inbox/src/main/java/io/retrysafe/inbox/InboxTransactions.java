package io.retrysafe.inbox;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * How the inbox runs one attempt in one database transaction: the key's claim, the work on the
 * same connection, the stored position, one commit. {@link #pooled} (the default) takes a pooled
 * connection and lets {@link TransactionalRetrySafe#execute} begin and commit; a framework that
 * manages transactions itself (Spring's {@code PlatformTransactionManager}) gives its own, built on
 * {@link TransactionalRetrySafe#join}.
 */
@FunctionalInterface
public interface InboxTransactions {

    /**
     * Runs {@code work} once in a new transaction in which {@code transactional} claims {@code key}
     * and stores the work's answer; returns the outcome only after the commit (or, for a replay or
     * a refusal, without running the work). A {@link RuntimeException} the work throws rolls the
     * transaction back and propagates unchanged.
     *
     * @throws io.retrysafe.StoreUnavailableException if the commit failed: nothing of the work was kept
     * @throws SQLException if no connection could be had: the work did not run
     */
    Outcome<String> execute(TransactionalRetrySafe transactional, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<String> codec, Work work) throws SQLException;

    /** The work of one attempt, given the transaction's connection; returns the position to store. */
    @FunctionalInterface
    interface Work {
        String run(Connection connection);
    }

    /** Each attempt on a connection of its own from {@code dataSource}, returned to the pool after. */
    static InboxTransactions pooled(DataSource dataSource) {
        Require.notNull(dataSource, "dataSource");
        return (transactional, key, fingerprint, codec, work) -> {
            Connection connection = dataSource.getConnection();
            try {
                return transactional.execute(connection, key, fingerprint, codec, attempt -> work.run(connection));
            } finally {
                try {
                    connection.close();
                } catch (SQLException e) {
                    System.getLogger(Inbox.class.getName()).log(Level.WARNING,
                            () -> "[" + transactional.engine().name() + "] could not return a connection to the pool: "
                                    + e);
                }
            }
        };
    }
}
