package io.retrysafe.spring;

import io.retrysafe.jdbc.TransactionalRetrySafe;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * What every broker's listeners need before they can be made exactly once, checked alike at start-up: the
 * JDBC store in transactional mode (the message id commits with the listener's writes) and one transaction
 * manager for the application's one data source.
 */
record InboxPrerequisites(TransactionalRetrySafe transactional, PlatformTransactionManager manager,
        DataSource dataSource) {

    /** @param property the property that switched the broker's listeners on, named in the start-up failure */
    static InboxPrerequisites of(String property, ObjectProvider<TransactionalRetrySafe> transactional,
            ObjectProvider<PlatformTransactionManager> managers, ObjectProvider<DataSource> dataSources) {
        TransactionalRetrySafe tx = transactional.getIfAvailable();
        if (tx == null) {
            throw new IllegalStateException(property + " needs the JDBC store in transactional mode "
                    + "(the message id commits with the listener's writes): one DataSource, retrysafe.store.type "
                    + "jdbc or unset, retrysafe.mode transactional or unset");
        }
        PlatformTransactionManager manager = managers.getIfUnique();
        DataSource dataSource = dataSources.getIfUnique();
        if (manager == null || dataSource == null) {
            throw new IllegalStateException(property + " needs one PlatformTransactionManager for the "
                    + "application's one DataSource, but had " + (manager == null ? "no unique transaction manager"
                    : "no unique DataSource"));
        }
        return new InboxPrerequisites(tx, manager, dataSource);
    }
}
