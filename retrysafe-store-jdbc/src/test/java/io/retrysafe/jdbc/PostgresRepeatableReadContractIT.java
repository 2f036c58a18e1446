package io.retrysafe.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The transactional store contract on PostgreSQL with the application's transactions at REPEATABLE READ: a
 * claim that waited for a holder's transaction finds a record its snapshot cannot see, and runs again.
 */
class PostgresRepeatableReadContractIT extends JdbcTransactionalContract {
    private static Opened db;

    @BeforeAll
    static void openDatabase() {
        db = postgres("TRANSACTION_REPEATABLE_READ", JdbcTransactionalContract::postgresStore);
    }

    @AfterAll
    static void closeDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @Override
    protected Opened opened() {
        return db;
    }
}
