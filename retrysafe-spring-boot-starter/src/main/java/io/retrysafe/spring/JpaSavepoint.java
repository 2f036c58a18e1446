package io.retrysafe.spring;

import jakarta.persistence.EntityManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.springframework.orm.jpa.EntityManagerFactoryInfo;
import org.springframework.orm.jpa.EntityManagerHolder;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The JPA side of the savepoint a declared exception rolls back to. Hibernate keeps entity changes in
 * its persistence context and writes them when it flushes, at the latest at commit, so a JDBC savepoint
 * alone does not cover them: flushed before the savepoint, what the transaction did before the call is
 * in the database and survives the rollback; cleared after the rollback, what the method left unflushed
 * is discarded. Only loaded when spring-orm is on the class path.
 */
final class JpaSavepoint {
    private final List<EntityManager> entityManagers;
    private final boolean rollbackOnlyBefore;

    private JpaSavepoint(List<EntityManager> entityManagers) {
        this.entityManagers = entityManagers;
        this.rollbackOnlyBefore = isRollbackOnly();
    }

    /**
     * Flushes the persistence contexts that {@code JpaTransactionManager} bound to the current transaction
     * on {@code dataSource}'s connection; null when there is none (a JDBC transaction).
     */
    static JpaSavepoint flush(DataSource dataSource) {
        List<EntityManager> bound = new ArrayList<>();
        for (Map.Entry<Object, Object> e : TransactionSynchronizationManager.getResourceMap().entrySet()) {
            if (e.getValue() instanceof EntityManagerHolder holder && inTransaction(holder.getEntityManager())
                    && (!(e.getKey() instanceof EntityManagerFactoryInfo info) || info.getDataSource() == null
                            || info.getDataSource() == dataSource)) {
                bound.add(holder.getEntityManager());
            }
        }
        if (bound.isEmpty()) {
            return null;
        }
        bound.forEach(EntityManager::flush);
        return new JpaSavepoint(bound);
    }

    /** Whether the entity manager's resource-local transaction is running, as JpaTransactionManager begins it. */
    private static boolean inTransaction(EntityManager em) {
        try {
            return em.getTransaction().isActive();
        } catch (IllegalStateException e) {
            return false; // a JTA entity manager: not on the connection this savepoint is set on
        }
    }

    /**
     * Discards the entity changes the method left unflushed; the entities of the persistence context,
     * the caller's included, are detached (their state before the call is in the database).
     */
    void clear() {
        entityManagers.forEach(EntityManager::clear);
    }

    /**
     * Whether the method marked the JPA transaction rollback-only: a participating {@code @Transactional}
     * that rolls back on the exception does on the way out, and JPA has no way to take the mark back.
     */
    boolean markedRollbackOnly() {
        return !rollbackOnlyBefore && isRollbackOnly();
    }

    private boolean isRollbackOnly() {
        for (EntityManager em : entityManagers) {
            if (em.getTransaction().getRollbackOnly()) {
                return true;
            }
        }
        return false;
    }
}
